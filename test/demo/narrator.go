package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

// narrator prints what the demo does, each line with the time since the
// start, and keeps the list of what was proven for the summary.
type narrator struct {
	out    io.Writer
	start  time.Time
	mu     sync.Mutex
	proofs []string
}

func newNarrator(out io.Writer) *narrator { return &narrator{out: out, start: time.Now()} }

func (n *narrator) elapsed() string {
	return fmt.Sprintf("[%6.1fs]", time.Since(n.start).Seconds())
}

// say prints one sentence of progress.
func (n *narrator) say(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, _ = fmt.Fprintf(n.out, "%s %s\n", n.elapsed(), fmt.Sprintf(format, args...))
}

// detail prints lines that belong to the last sentence (an excerpt, a list).
func (n *narrator) detail(text string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		_, _ = fmt.Fprintf(n.out, "           %s\n", line)
	}
}

// section starts a part of the demo.
func (n *narrator) section(title string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, _ = fmt.Fprintf(n.out, "\n== %s\n", title)
}

// proved records a claim after the checks behind it passed, and prints it.
func (n *narrator) proved(claim string) {
	n.mu.Lock()
	n.proofs = append(n.proofs, claim)
	n.mu.Unlock()
	n.say("PROVEN: %s", claim)
}

// waitFor waits like framework.WaitUntil and, so that a newcomer sees the
// demo is alive, says every 20 s what it still waits for and why.
func (n *narrator) waitFor(ctx context.Context, what string, timeout time.Duration, check func(context.Context) error) error {
	var (
		mu   sync.Mutex
		last error
	)
	done := make(chan struct{})
	defer close(done)
	go func() {
		ticker := time.NewTicker(20 * time.Second)
		defer ticker.Stop()
		waited := 0
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				waited += 20
				mu.Lock()
				reason := ""
				if last != nil {
					reason = ": " + shorten(last.Error(), 160)
				}
				mu.Unlock()
				n.say("  ... still waiting for %s (%d s so far%s)", what, waited, reason)
			}
		}
	}()
	return framework.WaitUntil(ctx, timeout, func(ctx context.Context) error {
		err := check(ctx)
		mu.Lock()
		last = err
		mu.Unlock()
		return err
	})
}

func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
