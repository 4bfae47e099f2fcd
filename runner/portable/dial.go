package portable

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// prepareMethod is the JobService call that carries a job's model and
// options.
const prepareMethod = "/org.apache.beam.model.job_management.v1.JobService/Prepare"

var install struct {
	once sync.Once
	err  error
}

// Install makes every job this process sends to a job server through Beam
// Go's grpcx.Dial (beamx.Run, ptest and the universal, portable, flink and
// spark runners) pass through Complete: it replaces grpcx.Dial, which Beam
// leaves to be overridden, with its default dialer plus a call interceptor
// that sees only JobService.Prepare. It does so once per process, and fails
// if grpcx.Dial was replaced already (by then the jobs' options cannot be
// completed: launch with runner.Run instead). Call it at pipeline
// construction, before the job runs.
func Install() error {
	install.once.Do(func() {
		if reflect.ValueOf(grpcx.Dial).Pointer() != reflect.ValueOf(grpcx.DefaultDial).Pointer() {
			install.err = fmt.Errorf("portable: grpcx.Dial was replaced by someone else, so the job's Flink options and model edits " +
				"cannot be added on its way to the job server: launch the pipeline with runner.Run (github.com/asyncbeam/asyncbeam/runner)")
			return
		}
		grpcx.Dial = dial
	})
	return install.err
}

// dial is grpcx.DefaultDial with completePrepare on its calls.
func dial(ctx context.Context, endpoint string, timeout time.Duration) (*grpc.ClientConn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cc, err := grpc.DialContext(ctx, endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithBlock(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)),
		grpc.WithUnaryInterceptor(completePrepare))
	if err != nil {
		return nil, fmt.Errorf("failed to dial server at %v: %w", endpoint, err)
	}
	return cc, nil
}

// completePrepare completes a job on its way to the job server (Complete),
// with the runner the --runner flag names or, for universal and portable,
// the one the job server says it is; other calls pass unchanged.
func completePrepare(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if pr, ok := req.(*jobpb.PrepareJobRequest); ok && method == prepareMethod {
		if err := Complete(KindOf(ctx, jobpb.NewJobServiceClient(cc)), pr); err != nil {
			return err
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// asksServer reports whether a --runner value leaves the runner to the job
// server: universal and portable.
func asksServer(runner string) bool {
	switch strings.ToLower(strings.TrimSpace(runner)) {
	case "universal", "portable", "portablerunner":
		return true
	}
	return false
}

// KindOf answers which runner the job server at cc is, for launchers that
// hold their own connection (runner.Run): the --runner flag's, or for
// universal and portable the job server's answer.
func KindOf(ctx context.Context, client jobpb.JobServiceClient) Kind {
	kind := KindOfFlag(*runners.Runner)
	if kind == Unknown && asksServer(*runners.Runner) {
		kind = askKind(ctx, client)
	}
	return kind
}
