package async

// Ready-made Listeners: LogListener, JSONLinesListener and TimingListener,
// and the readers of the files the last two write.

import (
	"bufio"
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// LogListener logs every element event at debug level with log/slog's
// default logger, one line per transition. Register nothing: the package
// registers it.
//
//	async.WithListener(&async.LogListener{})
type LogListener struct{}

// OnEvent logs e.
func (*LogListener) OnEvent(e Event) {
	if e.Type == EventLimitChanged {
		slog.Debug("async: concurrency limit changed", "transform", e.Transform, "limit", e.Limit, "details", e.Details)
		return
	}
	attrs := []any{"type", e.Type, "transform", e.Transform, "key", e.KeyText, "element", e.ElementID, "attempt", e.Attempt}
	switch e.Type {
	case EventRetrying:
		attrs = append(attrs, "delay", e.Delay, "kind", e.Kind, "error", e.Error)
	case EventFailed:
		attrs = append(attrs, "kind", e.Kind, "error", e.Error)
	case EventProgress:
		attrs = append(attrs, "progress", e.Progress, "details", e.Details)
	}
	slog.Debug("async: element "+string(e.Type), attrs...)
}

// JSONLinesListener appends every event to the file Path, as one JSON object
// per line (the fields of Event). The file is on the worker that runs the
// transform: with several worker processes on one machine they append to the
// same file, a line at a time; on remote workers, point Path at a local
// disk there. Read it back with ReadEvents.
type JSONLinesListener struct {
	Path string

	out lineFile
}

// Validate requires a path.
func (l *JSONLinesListener) Validate() error {
	if l.Path == "" {
		return errors.New("JSONLinesListener.Path is empty: name the file to append the events to")
	}
	return nil
}

// Setup opens the file.
func (l *JSONLinesListener) Setup() error { return l.out.open(l.Path) }

// OnEvent appends e.
func (l *JSONLinesListener) OnEvent(e Event) { l.out.write(e) }

// Close closes the file.
func (l *JSONLinesListener) Close() error { return l.out.close() }

// Timing is what TimingListener records of one element, from the events the
// worker that committed it saw. Times the worker did not see (the element was
// accepted, or first run, on another worker or before a restart) are zero,
// and so are the durations that need them.
type Timing struct {
	Transform string `json:"transform"`
	Key       string `json:"key"`
	ElementID string `json:"element_id"`
	// Outcome is "committed" or "failed".
	Outcome  string `json:"outcome"`
	Attempts int    `json:"attempts"`
	// Accepted, Started (the first attempt), Finished (the last attempt) and
	// Done (committed, or failed for good).
	Accepted time.Time `json:"accepted"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Done     time.Time `json:"done"`
	// Queued is Started-Accepted; Running is Finished-Started (retries
	// included); CommitDelay is Done-Finished; Total is Done-Accepted.
	Queued      time.Duration `json:"queued_ns"`
	Running     time.Duration `json:"running_ns"`
	CommitDelay time.Duration `json:"commit_delay_ns"`
	Total       time.Duration `json:"total_ns"`
}

// TimingListener collects the timings of each element (in the manner of
// TaskFlow's TimingListener): how long it waited for a slot, ran, and waited
// for its commit. When an element is committed or fails for good, its Timing
// is appended as a JSON line to Path, or logged at debug level when Path is
// empty. Read the file back with ReadTimings.
//
// It keeps the timestamps of elements in flight in memory until they are
// committed, failed or cancelled on this worker. An element whose key moved
// to another worker is committed there, so its entry here would stay: when
// more than MaxInFlight (default 100,000) are kept, those without an event
// for ten minutes are dropped. Entries are kept in the order of their last
// event, so that finding the stale ones costs nothing when there are none.
type TimingListener struct {
	Path        string
	MaxInFlight int

	out      lineFile
	mu       sync.Mutex
	inFlight map[timingKey]*list.Element // of *flight, in recent
	recent   list.List                   // flights, least recent event first
}

// flight is an element's timing so far and when it last had an event.
type flight struct {
	Timing
	key  timingKey
	last time.Time
}

// staleTiming is how long an element may go without an event before a full
// TimingListener drops it.
const staleTiming = 10 * time.Minute

type timingKey struct{ transform, key, id string }

// Setup opens the file, if any.
func (l *TimingListener) Setup() error {
	l.inFlight = map[timingKey]*list.Element{}
	if l.Path == "" {
		return nil
	}
	return l.out.open(l.Path)
}

// OnEvent folds e into its element's timing.
func (l *TimingListener) OnEvent(e Event) {
	done := l.fold(e)
	if done == nil {
		return
	}
	if l.Path == "" {
		slog.Debug("async: element timing", "transform", done.Transform, "key", done.Key, "element", done.ElementID,
			"outcome", done.Outcome, "attempts", done.Attempts, "queued", done.Queued, "running", done.Running,
			"commit_delay", done.CommitDelay, "total", done.Total)
		return
	}
	l.out.write(done)
}

// fold records e and returns the element's finished Timing, if e ends it.
func (l *TimingListener) fold(e Event) *Timing {
	if e.Type == EventLimitChanged {
		return nil // about no element
	}
	k := timingKey{e.Transform, e.KeyText, e.ElementID}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight == nil {
		l.inFlight = map[timingKey]*list.Element{}
	}
	el := l.inFlight[k]
	if el == nil {
		if e.Type == EventCancelled || e.Type == EventDeduplicated {
			return nil
		}
		l.makeRoom(e.Time)
		el = l.recent.PushBack(&flight{Timing: Timing{Transform: e.Transform, Key: e.KeyText, ElementID: e.ElementID}, key: k})
		l.inFlight[k] = el
	}
	l.recent.MoveToBack(el)
	f := el.Value.(*flight)
	f.last = e.Time
	t := &f.Timing
	switch e.Type {
	case EventAccepted:
		if t.Accepted.IsZero() {
			t.Accepted = e.Time
		}
	case EventStarted:
		if t.Started.IsZero() {
			t.Started = e.Time
		}
	case EventSucceeded:
		t.Finished = e.Time
	case EventCancelled:
		l.forget(el)
	case EventCommitted, EventFailed:
		l.forget(el)
		t.Outcome, t.Attempts, t.Done = string(e.Type), e.Attempt, e.Time
		if e.Type == EventFailed && t.Finished.IsZero() {
			t.Finished = e.Time
		}
		t.Queued = span(t.Accepted, t.Started)
		t.Running = span(t.Started, t.Finished)
		t.CommitDelay = span(t.Finished, t.Done)
		t.Total = span(t.Accepted, t.Done)
		return t
	}
	return nil
}

// makeRoom drops every stale entry once MaxInFlight are kept. They are the
// least recent, so it stops at the first entry that is not stale: each entry
// is visited once more than it is dropped.
func (l *TimingListener) makeRoom(now time.Time) {
	limit := l.MaxInFlight
	if limit <= 0 {
		limit = 100_000
	}
	if len(l.inFlight) < limit {
		return
	}
	for front := l.recent.Front(); front != nil && now.Sub(front.Value.(*flight).last) > staleTiming; front = l.recent.Front() {
		l.forget(front)
	}
}

func (l *TimingListener) forget(el *list.Element) {
	delete(l.inFlight, el.Value.(*flight).key)
	l.recent.Remove(el)
}

// span is b-a, or zero when either is unknown.
func span(a, b time.Time) time.Duration {
	if a.IsZero() || b.IsZero() {
		return 0
	}
	return b.Sub(a)
}

// Close closes the file, if any.
func (l *TimingListener) Close() error { return l.out.close() }

// lineFile appends JSON lines to a file, one write per line, so that
// concurrent writers (goroutines, or processes on one machine) never mix
// lines.
type lineFile struct {
	mu   sync.Mutex
	f    *os.File
	path string
	err  error // the first write error, logged once
}

func (w *lineFile) open(path string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("opening %s for events: %w", path, err)
	}
	w.f, w.path = f, path
	return nil
}

func (w *lineFile) write(v any) {
	line, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("async: encoding an event as JSON: %v", err)) // contained and counted by the hub
	}
	line = append(line, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return // closed by a registry reset; the events of a worker being torn down
	}
	if _, err := w.f.Write(line); err != nil && w.err == nil {
		w.err = err
		slog.Error("async: writing events failed; later write errors are not logged", "path", w.path, "err", err)
	}
}

func (w *lineFile) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// ReadEvents reads a file written by JSONLinesListener. Key is left nil;
// KeyText has the key.
func ReadEvents(path string) ([]Event, error) { return readLines[Event](path) }

// ReadTimings reads a file written by TimingListener.
func ReadTimings(path string) ([]Timing, error) { return readLines[Timing](path) }

func readLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}
