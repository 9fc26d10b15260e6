package agent_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/lastgood"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
)

// killRounds is how often the agent is killed in the middle of an apply,
// unless FAULT_KILLS says otherwise: each round takes about a second of CPU.
func killRounds() int {
	if n, err := strconv.Atoi(os.Getenv("FAULT_KILLS")); err == nil && n > 0 {
		return n
	}
	return 40
}

// largeConfig is a static config with n egress items from item first on:
// even ones a /30 on a port (the sharded interval sets), odd ones a single
// address on a port (the hash set). fwExtra is appended to the firewall.
func largeConfig(first, n int, fwExtra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: fw-test\nsources:\n  static:\n    firewall:\n      internalPrefixes: [10.0.0.0/8]%s\n    cwnp:\n      egress:\n", fwExtra)
	for i := first; i < first+n; i++ {
		u := uint32(100<<24|64<<16) + uint32(4*i)
		a := netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)})
		bits := 30
		if i%2 == 1 {
			bits = 32
		}
		fmt.Fprintf(&b, "      - {to: [{cidr: %s/%d}], ports: [{protocol: TCP, port: %d}]}\n", a, bits, 1000+i%5000)
	}
	b.WriteString("controllers:\n  firewall: {source: static}\n  cwnp: {source: static}\n")
	return b.String()
}

// canonicalTable is the agent's table as the kernel holds it, in a form
// that does not depend on handles, counters or the order of a hash set.
func canonicalTable(ns *netns.NS) string {
	GinkgoHelper()
	out, err := ns.Exec("nft", "-j", "list", "table", "inet", "firewall-agent")
	if err != nil && strings.Contains(out, "No such file or directory") {
		return "no table"
	}
	Expect(err).NotTo(HaveOccurred(), out)
	var doc struct {
		Nftables []map[string]any `json:"nftables"`
	}
	Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed())
	var objs []string
	for _, o := range doc.Nftables {
		if _, meta := o["metainfo"]; meta {
			continue
		}
		for _, kind := range []string{"set", "map"} {
			if s, ok := o[kind].(map[string]any); ok {
				if elems, ok := s["elem"].([]any); ok {
					slices.SortFunc(elems, func(a, b any) int { return strings.Compare(mustJSON(a), mustJSON(b)) })
				}
			}
		}
		objs = append(objs, mustJSON(withoutState(o)))
	}
	return strings.Join(objs, "\n")
}

// withoutState drops handles and counter values, recursively.
func withoutState(v any) any {
	switch t := v.(type) {
	case map[string]any:
		delete(t, "handle")
		if c, ok := t["counter"].(map[string]any); ok {
			c["packets"], c["bytes"] = 0, 0
		}
		for k, x := range t {
			t[k] = withoutState(x)
		}
	case []any:
		for i, x := range t {
			t[i] = withoutState(x)
		}
	}
	return v
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

var _ = Describe("the agent killed in the middle of an apply", func() {
	It("leaves the old or the new ruleset in the kernel and on disk, never a mix, and a restarted agent converges", func() {
		fw, err := netns.New(fmt.Sprintf("fwk%d-%d", os.Getpid(), seq.Add(1)))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(fw.Delete)
		dir := GinkgoT().TempDir()
		lastGood := filepath.Join(dir, "state", "last-good-ruleset.json")
		const n = 4000
		configs := map[string]string{
			"old": largeConfig(0, n, ""),
			// Half the items replaced: only set elements change.
			"new-elements": largeConfig(n/2, n, ""),
			// And a rule more: the table is replaced.
			"new-table": largeConfig(n/2, n, "\n      rateLimits: [{interface: ext0, rate: 50}]"),
		}
		prog := nftables.NewProgrammer(fw.Path())
		paths, rulesets, renders, dumps := map[string]string{}, map[string]*ruleset.Ruleset{}, map[string]string{}, map[string]string{}
		for name, content := range configs {
			paths[name] = filepath.Join(dir, name+".yaml")
			Expect(os.WriteFile(paths[name], []byte(content), 0o600)).To(Succeed())
			cfg, err := config.Load(paths[name])
			Expect(err).NotTo(HaveOccurred())
			rulesets[name], err = agent.Desired(cfg, agent.Inputs{})
			Expect(err).NotTo(HaveOccurred())
			renders[name] = ruleset.Render(rulesets[name])
			_, err = prog.Apply(rulesets[name])
			Expect(err).NotTo(HaveOccurred())
			dumps[name] = canonicalTable(fw)
		}
		Expect(dumps["old"]).NotTo(Equal(dumps["new-elements"]))
		Expect(dumps["new-elements"]).NotTo(Equal(dumps["new-table"]))

		reset := func() {
			GinkgoHelper()
			prog.Forget()
			_, err := prog.Apply(rulesets["old"])
			Expect(err).NotTo(HaveOccurred())
			Expect(lastgood.Save(lastGood, rulesets["old"])).To(Succeed())
		}
		agentCmd := func(name string) *exec.Cmd {
			return exec.Command("ip", "netns", "exec", fw.Name, binary, "--once", "--config", paths[name],
				"--last-good-ruleset", lastGood, "--snat-address-record", filepath.Join(dir, "snat.json"))
		}

		By("timing an apply that is not interrupted")
		var whole, apply time.Duration
		for _, name := range []string{"new-elements", "new-table", "new-elements", "new-table"} {
			reset()
			start := time.Now()
			out, err := agentCmd(name).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(out))
			whole += time.Since(start) / 4
			m := regexp.MustCompile(`duration=(\S+)`).FindStringSubmatch(string(out))
			Expect(m).NotTo(BeNil(), string(out))
			d, err := time.ParseDuration(m[1])
			Expect(err).NotTo(HaveOccurred())
			apply = max(apply, d)
		}
		fmt.Fprintf(GinkgoWriter, "an agent run takes %v on average, its apply up to %v\n", whole, apply)

		rounds := killRounds()
		rng := rand.New(rand.NewPCG(uint64(GinkgoRandomSeed()), 0))
		outcomes := map[string]int{}
		for round := range rounds {
			target := []string{"new-elements", "new-table"}[round%2]
			reset()
			// Half the kills anywhere in the run, half around the apply at its
			// end, after the time the last run took.
			delay := time.Duration(rng.Int64N(int64(whole)))
			if round%4 >= 2 {
				delay = whole - time.Duration(rng.Int64N(int64(3*apply)))
			}
			cmd := agentCmd(target)
			Expect(cmd.Start()).To(Succeed())
			time.Sleep(delay)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()

			switch got := canonicalTable(fw); got {
			case dumps["old"]:
				outcomes["old"]++
			case dumps[target]:
				outcomes["new"]++
			default:
				Fail(fmt.Sprintf("round %d (%s, killed after %v): the kernel holds neither the old nor the new ruleset", round, target, delay))
			}
			saved, err := lastgood.Load(lastGood)
			Expect(err).NotTo(HaveOccurred(), "round %d: the last good ruleset is complete", round)
			if r := ruleset.Render(saved); r != renders["old"] {
				Expect(r).To(Equal(renders[target]), "round %d: the saved ruleset is the old or the new one", round)
				Expect(canonicalTable(fw)).To(Equal(dumps[target]), "round %d: saved only once the kernel holds it", round)
				outcomes["saved new"]++
			}
			entries, err := filepath.Glob(filepath.Join(filepath.Dir(lastGood), ".*"))
			Expect(err).NotTo(HaveOccurred())
			Expect(len(entries)).To(BeNumerically("<=", 1), "at most the temporary file of the killed writer")

			By(fmt.Sprintf("round %d: the restarted agent converges", round), func() {
				start := time.Now()
				out, err := agentCmd(target).CombinedOutput()
				Expect(err).NotTo(HaveOccurred(), string(out))
				took := time.Since(start)
				if strings.Contains(string(out), "mode=unchanged") {
					took += apply
				}
				whole = took
				Expect(canonicalTable(fw)).To(Equal(dumps[target]))
				saved, err := lastgood.Load(lastGood)
				Expect(err).NotTo(HaveOccurred())
				Expect(ruleset.Render(saved)).To(Equal(renders[target]))
			})
		}
		fmt.Fprintf(GinkgoWriter, "after %d kills the kernel held: %v\n", rounds, outcomes)
		AddReportEntry("kill outcomes", outcomes)
		Expect(outcomes["old"]).To(BeNumerically(">", 0), "some kills came before the commit")
		Expect(outcomes["new"]).To(BeNumerically(">", 0), "some kills came after the commit")
	})
})
