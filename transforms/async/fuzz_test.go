package async

import (
	"testing"
	"time"
)

// FuzzOptions checks that option validation never panics and that every
// accepted combination is one the transform can run.
func FuzzOptions(f *testing.F) {
	f.Add(16, 0, int64(time.Second), int64(0), int64(0), 1, int64(100*time.Millisecond), int64(30*time.Second), 2.0, 0.2)
	f.Add(0, 0, int64(0), int64(-1), int64(-1), 0, int64(-1), int64(0), 0.5, 2.0)
	f.Add(8, 4, int64(1), int64(1), int64(1), 3, int64(0), int64(0), 1.0, 0.0)
	f.Fuzz(func(t *testing.T, par, buf int, freq, wait, timeout int64, attempts int, initial, maxDelay int64, mult, jitter float64) {
		opts := []Option{WithParallelism(par), WithCallbackFrequency(time.Duration(freq)), WithMaxWait(time.Duration(wait)),
			WithCallTimeout(time.Duration(timeout)), WithMaxAttempts(attempts),
			WithBackoff(Backoff{Initial: time.Duration(initial), Max: time.Duration(maxDelay), Multiplier: mult, Jitter: jitter})}
		if buf != 0 {
			opts = append(opts, WithMaxItemsToBuffer(buf))
		}
		s, err := resolve(opts)
		if err != nil {
			return
		}
		if s.parallelism <= 0 || s.buffer < s.parallelism || s.callbackFrequency <= 0 || s.maxWait < 0 || s.callTimeout < 0 || s.maxAttempts < 1 {
			t.Fatalf("accepted an unusable combination: %+v", s)
		}
		if d := s.backoff.Delay(attempts, []byte("seed")); d < 0 || d > s.backoff.Max {
			t.Fatalf("Delay = %v, outside [0, %v]", d, s.backoff.Max)
		}
	})
}
