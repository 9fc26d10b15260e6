package framework

import (
	"context"
	"fmt"
	"time"
)

// PollInterval is how often WaitUntil checks.
const PollInterval = time.Second

// WaitUntil calls check until it returns nil, the timeout passes or ctx is
// done. On timeout the error names the last reason check gave, so that a
// failure says what was seen rather than only that it took too long.
func WaitUntil(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(PollInterval)
	defer ticker.Stop()
	var last error
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		// A check cut short by the deadline says nothing about what it checks.
		if last == nil || ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still not done after %s: %w", timeout, last)
		case <-ticker.C:
		}
	}
}
