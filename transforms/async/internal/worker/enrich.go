package worker

// Enrich at run time: a lookup's answer joined to its record.

import (
	"context"

	"github.com/asyncbeam/asyncbeam/state"
)

// joined turns an Enrich element's job, whose work and cache answer [A],
// into one that outputs [join(record, A)]. It wraps the cache (f.Cached),
// so that the cache keeps answers, not one record's output.
func (f *Core) joined(el Element, job state.Job) state.Job {
	e := f.User.Enrich
	if e == nil {
		return job
	}
	work := job.Work
	job.Work = func(ctx context.Context, attempt int) ([]any, error) {
		outs, err := work(ctx, attempt)
		if err != nil {
			return outs, err
		}
		return e.JoinAnswer(el.Value, outs)
	}
	if lookup := job.Lookup; lookup != nil {
		job.Lookup = func(ctx context.Context) state.Lookup {
			l := lookup(ctx)
			if !l.Hit {
				return l
			}
			outs, err := e.JoinAnswer(el.Value, l.Outputs)
			if err != nil {
				return state.Lookup{Err: err}
			}
			l.Outputs = outs
			return l
		}
	}
	return job
}
