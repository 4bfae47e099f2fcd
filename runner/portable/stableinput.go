package portable

import "fmt"

// CheckStableInput refuses a Flink job with marked steps that require
// stable input (marked) which Flink would fail for want of checkpointing
// (streaming mode), or run in batch mode without the stable input they
// require, unless job.BatchRevert accepts that.
func CheckStableInput(marked int, job Job) error {
	switch {
	case marked == 0:
	case job.Streaming && job.Checkpointing == 0:
		return fmt.Errorf("portable: %d revert step(s) require stable input, which Flink runs only with checkpointing: "+
			"pass --checkpointing_interval (for example 30s; Revert's failure records wait for the next checkpoint)", marked)
	case !job.Streaming && !job.BatchRevert:
		return fmt.Errorf("portable: %d revert step(s) in a job without unbounded input: Flink runs it in batch mode, which ignores stable input, "+
			"so Revert could run for an element that a restart then replays; give the job an unbounded input (Flink then runs it in streaming mode), "+
			"drop Revert, or pass --flink_batch_revert to accept that", marked)
	}
	return nil
}
