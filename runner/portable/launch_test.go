package portable_test

// Payload-level tests of what each launcher sends a job server: a fake
// JobService on loopback records the Prepare request and refuses it, so
// nothing runs.

import (
	"context"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/asyncbeam/asyncbeam/runner"
	"github.com/asyncbeam/asyncbeam/runner/portable"
	"github.com/asyncbeam/asyncbeam/transforms/async"
)

func TestMain(m *testing.M) {
	beam.Init()
	os.Exit(m.Run())
}

func label(k string, v int) string { return k }

func keyed(b []byte) (string, int) { return "k", len(b) }

func init() {
	register.Function2x1(label)
	register.Function1x2(keyed)
}

// fakeJobs is a job service that describes the options given (flink_master
// makes it Flink to a universal launcher) and refuses every job after
// recording its Prepare request.
type fakeJobs struct {
	jobpb.UnimplementedJobServiceServer
	describe []string
	mu       sync.Mutex
	got      []*jobpb.PrepareJobRequest
}

const refusal = "fake job server: recorded"

func (f *fakeJobs) Prepare(_ context.Context, req *jobpb.PrepareJobRequest) (*jobpb.PrepareJobResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, req)
	return nil, status.Error(codes.FailedPrecondition, refusal)
}

func (f *fakeJobs) DescribePipelineOptions(context.Context, *jobpb.DescribePipelineOptionsRequest) (*jobpb.DescribePipelineOptionsResponse, error) {
	resp := &jobpb.DescribePipelineOptionsResponse{}
	for _, n := range f.describe {
		resp.Options = append(resp.Options, &jobpb.PipelineOptionDescriptor{Name: n})
	}
	return resp, nil
}

func (f *fakeJobs) last() *jobpb.PrepareJobRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.got) == 0 {
		return nil
	}
	return f.got[len(f.got)-1]
}

// serve starts fake on loopback and returns its address.
func serve(t *testing.T, fake *fakeJobs) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	jobpb.RegisterJobServiceServer(srv, fake)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// useFlags sets the launch flags for one case and restores them after.
func useFlags(t *testing.T, runnerName, endpoint string, interval time.Duration) {
	t.Helper()
	r, e, env, ckpt := *runners.Runner, *jobopts.Endpoint, *jobopts.EnvironmentType, *portable.Checkpointing
	t.Cleanup(func() {
		*runners.Runner, *jobopts.Endpoint, *jobopts.EnvironmentType, *portable.Checkpointing = r, e, env, ckpt
	})
	*runners.Runner, *jobopts.Endpoint, *jobopts.EnvironmentType, *portable.Checkpointing = runnerName, endpoint, "LOOPBACK", interval
}

// unboundedJob is the async transform over a periodic impulse, built for
// the runner the flags name now.
func unboundedJob() *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	start := time.Now().Add(time.Hour)
	ticks := periodic.Impulse(s, start, start.Add(time.Second), 100*time.Millisecond, false)
	async.ParDo(s, label, beam.ParDo(s, keyed, ticks))
	return p
}

var launchers = []struct {
	name string
	run  func(*beam.Pipeline) error
}{
	{"runner.Run", func(p *beam.Pipeline) error { _, err := runner.Run(context.Background(), p); return err }},
	{"beamx.Run", func(p *beam.Pipeline) error { return beamx.Run(context.Background(), p) }},
	{"ptest.Run", ptest.Run},
}

// option is the text of a top-level option of a recorded job, "" if absent.
func option(req *jobpb.PrepareJobRequest, name string) string {
	v := req.GetPipelineOptions().GetFields()[portable.Key(name)]
	if v == nil {
		return ""
	}
	b, _ := v.MarshalJSON()
	return string(b)
}

// hasDrain reports whether the job's model has the end-of-input drain.
func hasDrain(req *jobpb.PrepareJobRequest) bool {
	for _, t := range req.GetPipeline().GetComponents().GetTransforms() {
		if strings.HasSuffix(t.GetUniqueName(), "/Drain") {
			return true
		}
	}
	return false
}

// TestFlinkJobOptions: for --runner=flink every launcher sends the options a
// Flink streaming job needs, the checkpoint interval, and a model with the
// end-of-input drain.
func TestFlinkJobOptions(t *testing.T) {
	fake := &fakeJobs{}
	addr := serve(t, fake)
	for _, l := range launchers {
		useFlags(t, "flink", addr, 5*time.Second)
		err := l.run(unboundedJob())
		if err == nil || !strings.Contains(err.Error(), refusal) {
			t.Fatalf("%s: %v; want the fake job server's refusal", l.name, err)
		}
		req := fake.last()
		for name, want := range map[string]string{
			"streaming": "true", "shutdown_sources_after_idle_ms": "15000", "finish_bundle_before_checkpointing": "true",
			"checkpointing_interval": "5000", "enable_stable_input_drain": "true",
		} {
			if got := option(req, name); got != want {
				t.Errorf("%s: option %s = %q; want %q", l.name, name, got, want)
			}
		}
		if option(req, "go_options") == "" {
			t.Errorf("%s: the job lost Beam Go's own options", l.name)
		}
		if !hasDrain(req) {
			t.Errorf("%s: the model has no end-of-input drain; want it on by default for Flink", l.name)
		}
	}
}

// TestUniversalAsksTheJobServer: a job for --runner=universal is completed
// for the runner the job server says it is; built without the drain, it is
// refused by a Flink job server before anything runs, and taken unchanged
// by another.
func TestUniversalAsksTheJobServer(t *testing.T) {
	flink := &fakeJobs{describe: []string{"job_name", "flink_master"}}
	other := &fakeJobs{}
	flinkAddr, otherAddr := serve(t, flink), serve(t, other)
	for _, l := range launchers {
		useFlags(t, "universal", flinkAddr, 0)
		err := l.run(unboundedJob())
		if err == nil || !strings.Contains(err.Error(), "without the end-of-input drain") {
			t.Errorf("%s to Flink: %v; want the refusal of a job without the drain", l.name, err)
		}
		if flink.last() != nil {
			t.Errorf("%s to Flink: the job server got the job; want it refused before", l.name)
		}

		useFlags(t, "universal", otherAddr, 0)
		if err := l.run(unboundedJob()); err == nil || !strings.Contains(err.Error(), refusal) {
			t.Fatalf("%s to another job server: %v; want the fake job server's refusal", l.name, err)
		}
		if got := option(other.last(), "streaming"); got != "" {
			t.Errorf("%s to another job server: streaming = %s; want Flink's options only for Flink", l.name, got)
		}
	}
}
