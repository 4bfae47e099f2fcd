// Package guard holds the policies that protect a called service from the
// pool that calls it: a rate limit (per worker, or shared by all workers
// through Redis), an adaptive concurrency limit, a client-side throttle that
// paces the pool while the service answers "overloaded", and a budget for the
// retries of overloaded calls.
//
// It knows nothing of Beam. A Guard sits in front of every attempt of a call:
// Enter waits until the attempt may start (or says to come back later), and
// the done func it returns is told how the attempt ended. The adaptive
// limit is enforced by the caller (Guard.Limit): the async transform's pool
// sizes its slots to it, so waiting calls keep their priority order. The async transform
// builds one Guard per transform and worker process, next to its pool
// (state.Config.Gate), from the options WithRateLimit, WithSharedRateLimit,
// WithAdaptiveParallelism and WithRetryBudget.
//
// Every policy takes its clock from the Guard's Config (Now, and Sleep for
// the throttle's waits), so the unit tests and the transform's fault
// simulator run on a fake clock; only the rate limits wait in real time
// (x/time/rate and Redis keep their own clocks).
package guard
