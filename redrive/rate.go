package redrive

import (
	"context"
	"sync"
	"time"
)

// limiter is a token bucket of rate tokens per second whose rate may ramp up
// linearly from a tenth of the target over ramp.
type limiter struct {
	mu     sync.Mutex
	rate   float64
	ramp   time.Duration
	now    func() time.Time
	start  time.Time
	last   time.Time
	tokens float64
	burst  float64
	sleep  func(ctx context.Context, d time.Duration) error
}

func newLimiter(rate float64, ramp time.Duration, now func() time.Time) *limiter {
	burst := rate / 10
	if burst < 1 {
		burst = 1
	}
	t := now()
	return &limiter{rate: rate, ramp: ramp, now: now, start: t, last: t, tokens: 1, burst: burst, sleep: sleepCtx}
}

// current is the rate at time t.
func (l *limiter) current(t time.Time) float64 {
	if l.ramp <= 0 {
		return l.rate
	}
	f := float64(t.Sub(l.start)) / float64(l.ramp)
	if f >= 1 {
		return l.rate
	}
	return l.rate * (0.1 + 0.9*f)
}

// wait takes n tokens, sleeping until they are there.
func (l *limiter) wait(ctx context.Context, n float64) error {
	for {
		l.mu.Lock()
		t := l.now()
		r := l.current(t)
		l.tokens += t.Sub(l.last).Seconds() * r
		if l.tokens > l.burst {
			l.tokens = l.burst
		}
		l.last = t
		if l.tokens >= n {
			l.tokens -= n
			l.mu.Unlock()
			return nil
		}
		need := time.Duration((n - l.tokens) / r * float64(time.Second))
		l.mu.Unlock()
		if need < time.Millisecond {
			need = time.Millisecond
		}
		if err := l.sleep(ctx, need); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
