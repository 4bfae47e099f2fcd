package worker

// A DoFn instance's lifecycle: Setup builds its runtime and makes sure
// what the transform needs can be built in this process; Teardown ends it.

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/asyncbeam/asyncbeam/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// Setup makes sure the listeners (if any) can be built in this process,
// reaches Redis if the cache requires it (Cache.RedisRequired), rebuilds the
// wrapped fn, forwards its Setup, and prepares coders. What fails before
// the wrapped fn's Setup leaves it unstarted, since it would want its
// Teardown.
func (f *Core) Setup(ctx context.Context) error {
	if f.clock == nil {
		f.clock = timers.System{}
	}
	f.last = &atomic.Pointer[worker]{}
	if _, err := f.worker().hubOf(f); err != nil {
		return err // the listeners cannot be built in this process
	}
	if err := f.requireRedis(ctx); err != nil {
		return err
	}
	u, err := wrapped.Start(ctx, f.User)
	if err != nil {
		return err
	}
	f.user = u
	f.metrics = terms.NewMetrics(f.Name)
	f.tickets = NewBundleTickets(f)
	f.PrepareCoders()
	return nil
}

// requireRedis makes one round trip to Redis with Cache.RedisRequired, and
// returns its failure with the cause: Setup fails with it.
func (f *Core) requireRedis(ctx context.Context) error {
	if f.Cache == nil || !f.Cache.RedisRequired {
		return nil
	}
	rc, err := f.ResultCache()
	if err != nil {
		return err
	}
	if err := rc.shared.Check(ctx); err != nil {
		return fmt.Errorf("async: %s: Cache.RedisRequired: %w", f.Name, err)
	}
	return nil
}

// Teardown forwards Teardown to the wrapped fn once its running calls end.
func (f *Core) Teardown(ctx context.Context) error {
	if f.user == nil {
		return nil
	}
	return f.user.Close(ctx)
}
