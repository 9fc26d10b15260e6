package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// The shoot of the demo, as gardenlet names its namespace in a seed.
const shootNamespace = "shoot--demo--local"

// seed is one seed of the demo with the extension running in it.
type seed struct {
	name string
	cp   *testenv.ControlPlane
	c    client.Client
	// stop kills the extension in this seed.
	stop func() error
}

// demo is the state the steps share; each step adds to it what the later
// ones need.
type demo struct {
	run run
	n   *narrator

	agentPath string
	// site is where the firewall machine runs: the lab, or a namespace.
	site site
	// provider makes the machines, for every seed.
	provider machine.Provider
	shoot    *testenv.ControlPlane
	// shootClient is an administrator's client of the shoot.
	shootClient client.WithWatch
	seedA       *seed
	seedB       *seed

	// The shoot's Extensions, in the seed that currently holds them.
	owner    *seed
	firewall *extensionsv1alpha1.Extension
	acl      *extensionsv1alpha1.Extension

	// machineID is the firewall's machine.
	machineID string
	// kept is the node's connection to the outside server, opened once the
	// shoot's policy allowed it and followed through the migration.
	kept keptConn

	steps []string
	done  int
}

// step is one part of the demo.
type step struct {
	title string
	do    func(context.Context) error
}

// play runs the steps in order. Each step checks what it shows; the first
// failure ends the demo. A step needs only what the steps before it set
// up.
func (d *demo) play(ctx context.Context) error {
	steps := []step{
		{"A local Gardener landscape: seed A, the shoot, the extension", d.startLandscape},
		{"The shoot's firewall", d.bringUpFirewall},
		{"The shoot owner's ClusterwideNetworkPolicy", d.applyPolicy},
		{"What the firewall enforces", d.showEnforcement},
		{"The shoot's kube-apiserver ACL", d.enableACL},
		{"Control plane migration from seed A to seed B", d.migrate},
	}
	if _, ok := d.site.(*labSite); ok && os.Getenv("DEMO_ROLL") == "true" {
		// The local provider's machines have no BGP: nothing to announce.
		// Opt-in until it has passed in the lab (issue #28).
		steps = append(steps, step{"A rolling update of the firewall: distance over BGP, no packet lost", d.rollFirewall})
	}
	for _, s := range steps {
		d.steps = append(d.steps, s.title)
	}
	for i, s := range steps {
		d.n.section(fmt.Sprintf("%d/%d %s", i+1, len(steps), s.title))
		if err := s.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.title, err)
		}
		d.done++
	}
	return nil
}

// failure says what failed and shows the end of the logs that tell why.
func (d *demo) failure(err error) {
	d.n.say("FAILED: %v", err)
	if d.site != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		d.showLogTail("the firewall agent", "the machine", d.site.agentLog(ctx))
	}
	data, _ := os.ReadFile(d.extensionLog())
	d.showLogTail("the extension", d.extensionLog(), string(data))
}

func (d *demo) showLogTail(what, where, log string) {
	if log == "" {
		return
	}
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	d.n.say("Last lines of the log of %s (%s):", what, where)
	for i := range lines {
		lines[i] = shorten(lines[i], 300)
	}
	d.n.detail(strings.Join(lines, "\n"))
}

// summary lists what was proven and, after a failure, what was not shown.
func (d *demo) summary(err error) {
	d.n.section("Summary")
	d.n.mu.Lock()
	proofs := append([]string(nil), d.n.proofs...)
	d.n.mu.Unlock()
	if len(proofs) == 0 {
		fmt.Println("Nothing was proven.")
	} else {
		fmt.Println("Proven on this host, each by a check the demo made:")
	}
	for _, p := range proofs {
		fmt.Println("  - " + p)
	}
	if errors.Is(err, errInterrupted) {
		fmt.Println("Not shown, because the demo was interrupted:")
	} else if err != nil {
		fmt.Println("Not shown, because of the failure above:")
		for _, s := range d.steps[d.done:] {
			fmt.Println("  - " + s)
		}
	}
}
