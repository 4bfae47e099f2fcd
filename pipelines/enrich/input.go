package main

// The job's input: the sample, a generated file, or the user's; read with
// line numbers, and parsed into keyed records or bad-input failures.

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
)

// sampleRecords are the 3,000 order records shipped in data/: the input
// when neither --input nor --generate is given.
//
//go:embed data/records.jsonl
var sampleRecords []byte

// inputPath returns --input; or writes --generate records, or the embedded
// sample, next to the output and returns that file.
func inputPath(outDir string) (string, error) {
	switch {
	case *input != "":
		return *input, nil
	case *generate > 0:
		path := filepath.Join(outDir, "generated-records.jsonl")
		return path, generateRecords(path, *generate, *customers, *badLines)
	}
	path := filepath.Join(outDir, "sample-records.jsonl")
	return path, os.WriteFile(path, sampleRecords, 0o644)
}

// generateRecords writes n order records spread over customers customers
// (drawn with a fixed seed, so every run makes the same file), with bad
// malformed lines among them.
func generateRecords(path string, n, customers, bad int) error {
	if customers <= 0 {
		return fmt.Errorf("--customers=%d: want at least one customer", customers)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewPCG(7, 11))
	countries := []string{"DE", "ES", "FR", "IT", "NL", "PL"}
	channels := []string{"web", "mobile", "partner", "store"}
	badAt := map[int]bool{}
	for k := 1; k <= bad; k++ {
		badAt[k*n/(bad+1)] = true
	}
	for i := 1; i <= n; i++ {
		if badAt[i] {
			fmt.Fprintf(w, "{\"id\":\"ord-%07d\",\"customer_id\":\n", i) // cut short: not JSON
			continue
		}
		fmt.Fprintf(w, `{"id":"ord-%07d","customer_id":"cust-%06d","country":%q,"channel":%q,"amount":%.2f,"currency":"EUR","items":%d}`+"\n",
			i, r.IntN(customers), countries[r.IntN(len(countries))], channels[r.IntN(len(channels))], 1+r.Float64()*200, 1+r.IntN(9))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// numberedLine is one non-empty input line and its number (from 1).
type numberedLine struct {
	N    int
	Text string
}

// readLines emits every non-empty line of the file at path with its number,
// through Beam's file systems (a local path here; a gs:// path on Dataflow).
type readLines struct{}

func (readLines) ProcessElement(ctx context.Context, path string, emit func(numberedLine)) error {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return err
	}
	defer fs.Close()
	rc, err := fs.OpenRead(ctx, path)
	if err != nil {
		return fmt.Errorf("opening input %s: %w", path, err)
	}
	defer rc.Close()
	return eachLine(rc, func(n int, line string) error {
		emit(numberedLine{N: n, Text: line})
		return nil
	})
}

// eachLine calls fn for every non-empty line of r, with its line number.
func eachLine(r io.Reader, fn func(n int, line string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			if err := fn(n, line); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

// parseRecord reads one input line: its key (the keyField's value), and
// its priority from priorityField (an integer; absent is 0). The error says
// what is wrong with the line.
func parseRecord(line string, keyField, priorityField string) (key string, rec map[string]any, priority int, err error) {
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		return "", nil, 0, fmt.Errorf("not a JSON object: %v", err)
	}
	v, ok := rec[keyField]
	if !ok {
		return "", nil, 0, fmt.Errorf("no field %q to key by (see --key_field)", keyField)
	}
	if p, ok := rec[priorityField]; ok && priorityField != "" {
		n, isNumber := p.(float64)
		if !isNumber || n != float64(int(n)) {
			return "", nil, 0, fmt.Errorf("the priority field %q is %v, not an integer (see --priority_field)", priorityField, p)
		}
		priority = int(n)
	}
	return fmt.Sprint(v), rec, priority, nil
}

// accountingID is how the final check finds an input line among the
// outputs: a good record by its "id", a bad line by its number.
func accountingID(n int, line string) string {
	_, rec, _, err := parseRecord(line, *keyField, *priority)
	if err != nil {
		return fmt.Sprintf("line:%d", n)
	}
	return "id:" + fmt.Sprint(rec["id"])
}

// inputIDs reads the input file and returns, for each non-empty line, how
// the final check finds it among the outputs (see accountingID).
func inputIDs(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening input: %w", err)
	}
	defer f.Close()
	var ids []string
	err = eachLine(f, func(n int, line string) error {
		ids = append(ids, accountingID(n, line))
		return nil
	})
	return ids, err
}
