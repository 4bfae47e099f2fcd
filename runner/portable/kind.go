package portable

import (
	"context"
	"strings"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
)

// Kind is the runner behind a job server, where the project needs to know.
type Kind string

// The runners Complete tells apart. Unknown is any other job server (a
// prism job server, Beam Python's job service).
const (
	Unknown Kind = ""
	Flink   Kind = "flink"
	Spark   Kind = "spark"
)

// KindOfFlag is the runner a --runner flag value names, or Unknown for
// universal, portable and the rest.
func KindOfFlag(runner string) Kind {
	switch strings.ToLower(strings.TrimSpace(runner)) {
	case "flink", "flinkrunner":
		return Flink
	case "spark", "sparkrunner":
		return Spark
	}
	return Unknown
}

// kindOfOptions is the runner whose job server describes these options
// (DescribePipelineOptions): Flink's lists flink_master, Spark's
// spark_master_url.
func kindOfOptions(names []string) Kind {
	for _, n := range names {
		switch n {
		case "flink_master":
			return Flink
		case "spark_master_url":
			return Spark
		}
	}
	return Unknown
}

// askKind asks the job server which runner it is; Unknown when it cannot
// say (prism answers with no options, others may not implement the call).
func askKind(ctx context.Context, client jobpb.JobServiceClient) Kind {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := client.DescribePipelineOptions(ctx, &jobpb.DescribePipelineOptionsRequest{})
	if err != nil {
		return Unknown
	}
	names := make([]string, 0, len(resp.GetOptions()))
	for _, o := range resp.GetOptions() {
		names = append(names, o.GetName())
	}
	return kindOfOptions(names)
}
