// Command demo shows the extension's main job on one host, with nothing but
// what this repository builds: Gardener control planes for two seeds and a
// shoot, the extension in a seed with the local machine provider (a firewall
// machine is a network namespace running the real firewall-agent), the
// shoot's firewall and acl Extensions, and a control plane migration from
// seed A to seed B. Every sentence it prints as proven comes from a check it
// has just made; it exits non-zero when one fails, and cleans up in any
// case. `make demo` runs it; `make demo-down` (`demo down`) removes what an
// interrupted run left behind. Root only: it creates network namespaces.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	os.Exit(command(os.Args[1:]))
}

func command(args []string) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "The demo needs root: it creates network namespaces and runs firewall agents in them. Run it as root (sudo make demo).")
		return 2
	}
	switch {
	case len(args) == 0:
		return demoMain()
	case len(args) == 1 && args[0] == "down":
		return downMain()
	default:
		fmt.Fprintln(os.Stderr, "usage: demo [down]")
		return 2
	}
}

var errInterrupted = errors.New("interrupted")

func downMain() int {
	say := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	found, err := sweep(anyRun(), say)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Left behind:\n%v\n", err)
		return 1
	}
	if found == 0 {
		fmt.Println("Nothing left from a demo: no fwdemo-* process, network namespace or folder.")
	} else {
		fmt.Println("Done: no fwdemo-* process, network namespace or folder is left.")
	}
	return 0
}

func demoMain() int {
	r, err := newRun()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	n := newNarrator(os.Stdout)
	d := &demo{run: r, n: n}

	fmt.Printf("Firewall extension demo, run %s. Everything it creates on this host is named %s*;\n", r.id, r.name())
	fmt.Println("it cleans up at the end, also on failure or Ctrl-C. `make demo-down` removes what an interrupted run left.")
	if earlier := leftovers(anyRun()); earlier != nil {
		fmt.Printf("Note: an earlier demo left things behind (`make demo-down` removes them):\n%v\n", earlier)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cleanupCtx, cancelCleanup := context.WithCancel(context.Background())
	stopSignals := onSignals(n, cancel, cancelCleanup)
	defer stopSignals()

	err = d.play(ctx)
	failed := err != nil
	switch {
	case failed && ctx.Err() != nil:
		err = errInterrupted
		n.say("Interrupted.")
	case failed:
		d.failure(err)
	}
	d.summary(err)
	if cerr := d.cleanup(cleanupCtx); cerr != nil {
		n.say("Cleanup left something behind; `make demo-down` removes it:\n%v", cerr)
		failed = true
	}
	if failed {
		fmt.Printf("\nDemo FAILED after %s.\n", time.Since(n.start).Round(time.Second))
		return 1
	}
	fmt.Printf("\nDemo passed in %s.\n", time.Since(n.start).Round(time.Second))
	return 0
}

// onSignals cancels the demo on the first Ctrl-C (or SIGTERM, SIGHUP), so
// that it cleans up; a second one also cuts the cleanup short to the
// removal of processes, namespaces and folders.
func onSignals(n *narrator, cancel, cancelCleanup context.CancelFunc) (stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		count := 0
		for {
			select {
			case <-done:
				return
			case sig := <-ch:
				count++
				switch count {
				case 1:
					n.say("Got %s: stopping and cleaning up (Ctrl-C again to skip deleting the Extensions gracefully)", sig)
					cancel()
				case 2:
					n.say("Got %s again: removing processes, namespaces and folders right away", sig)
					cancelCleanup()
				default:
					n.say("Still cleaning up; if you kill the demo now, run `make demo-down` afterwards")
				}
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
