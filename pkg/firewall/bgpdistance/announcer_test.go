package bgpdistance_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bgpdistance"
)

var _ = Describe("Announcer", func() {
	var (
		dir, conf, calls string
		a                *bgpdistance.Announcer
		original         string
	)
	// program writes an executable that logs its arguments into calls and
	// exits with code, printing out.
	// Asked for bgpd's summary, it prints the file summary instead, and
	// logs nothing: the JSON that FRR 8.4 prints, peers and prefixes sent.
	program := func(name string, code int, out string) string {
		p := filepath.Join(dir, name)
		script := "#!/bin/sh\ncase \"$*\" in *'summary json'*) cat " + filepath.Join(dir, "summary") + "; exit 0;; " +
			"*'show running-config'*) exec cat " + filepath.Join(dir, "running") + ";; esac\n" +
			"echo \"" + name + " $*\" >>" + calls + "\necho '" + out + "'\nexit " + string(rune('0'+code)) + "\n"
		Expect(os.WriteFile(p, []byte(script), 0o755)).To(Succeed())
		return p
	}
	// sending sets how many prefixes bgpd sends its peer in the summary.
	sending := func(n int) {
		// As FRR 8.4 prints it in the lab (shortened).
		summary := `{"routerId":"10.255.0.2","as":4200000001,"vrfName":"default","peers":{"lan0":{"hostname":"rack","remoteAs":4210000001,"pfxRcd":1,"pfxSnt":` +
			strconv.Itoa(n) + `,"state":"Established","peerState":"OK","idType":"interface"},"lan1":{"remoteAs":0,"pfxRcd":0,"pfxSnt":0,"state":"Idle","idType":"interface"}},"totalPeers":2}`
		// Whole or not at all, as vtysh prints it: the stand-in reads the file meanwhile.
		Expect(os.WriteFile(filepath.Join(dir, "summary.new"), []byte(summary), 0o644)).To(Succeed())
		Expect(os.Rename(filepath.Join(dir, "summary.new"), filepath.Join(dir, "summary"))).To(Succeed())
	}
	called := func() []string {
		data, err := os.ReadFile(calls)
		if os.IsNotExist(err) {
			return nil
		}
		Expect(err).NotTo(HaveOccurred())
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	inForce := func() int32 {
		GinkgoHelper()
		d, ok := a.InForce()
		Expect(ok).To(BeTrue(), "a distance is in force")
		return d
	}
	onDisk := func() string {
		data, err := os.ReadFile(conf)
		Expect(err).NotTo(HaveOccurred())
		return string(data)
	}

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		conf, calls = filepath.Join(dir, "frr.conf"), filepath.Join(dir, "calls")
		original = firewallConfigs()["frr.conf.firewall"]
		Expect(os.WriteFile(conf, []byte(original), 0o640)).To(Succeed())
		sending(1)
		a = &bgpdistance.Announcer{ConfigPath: conf, Vtysh: program("vtysh", 0, ""), Reload: program("reload", 0, ""),
			SettleStable: 300 * time.Millisecond, SettleTimeout: 5 * time.Second}
	})

	It("checks, writes and reloads, keeping the file's mode, and does nothing for a distance in force", func(ctx context.Context) {
		_, ok := a.InForce()
		Expect(ok).To(BeFalse())
		Expect(a.Announce(ctx, 3)).To(Succeed())
		Expect(called()).To(HaveExactElements(
			MatchRegexp(`^vtysh --dryrun --inputfile .*/\.frr\.conf\.firewall-agent$`),
			"reload --reload "+conf,
			"vtysh -c clear bgp l2vpn evpn *"), "a new prepend goes out by a session reset only, never as an update")
		Expect(onDisk()).To(ContainSubstring("\nbgp route-map delay-timer 0\n"), "bgpd sends nothing by itself at the reload")
		d, _ := bgpdistance.Distance(onDisk())
		Expect(d).To(Equal(3))
		info, err := os.Stat(conf)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o640)))
		Expect(inForce()).To(BeEquivalentTo(3))
		Expect(filepath.Glob(filepath.Join(dir, ".frr.conf*"))).To(BeEmpty(), "no temporary file stays")

		Expect(a.Announce(ctx, 3)).To(Succeed())
		Expect(called()).To(HaveLen(3), "an unchanged distance runs nothing")
		Expect(a.Announce(ctx, 0)).To(Succeed())
		Expect(called()).To(HaveLen(6))
		d, _ = bgpdistance.Distance(onDisk())
		Expect(d).To(BeZero())
	})

	It("sends a new prepend as an update, no session reset, where the fabric takes updates", func(ctx context.Context) {
		a.Update = true
		Expect(a.Announce(ctx, 3)).To(Succeed())
		Expect(called()).To(HaveExactElements(
			MatchRegexp(`^vtysh --dryrun --inputfile .*/\.frr\.conf\.firewall-agent$`),
			"reload --reload "+conf,
			"vtysh -c clear bgp l2vpn evpn * soft out"), "a soft refresh sends the new path; no session goes down")
		Expect(inForce()).To(BeEquivalentTo(3))
		Expect(a.Announce(ctx, 0)).To(Succeed())
		Expect(called()[3:]).To(HaveExactElements(
			MatchRegexp(`^vtysh --dryrun`), "reload --reload "+conf, "vtysh -c clear bgp l2vpn evpn * soft out"))
		Expect(inForce()).To(BeEquivalentTo(0))
	})

	It("resets the fabric's sessions only when the routes change: not for a restarted agent whose file holds the distance", func(ctx context.Context) {
		Expect(a.Announce(ctx, 3)).To(Succeed())
		Expect(called()).To(ContainElement("vtysh -c clear bgp l2vpn evpn *"), "a new distance")
		restarted := &bgpdistance.Announcer{ConfigPath: conf, Vtysh: a.Vtysh, Reload: a.Reload, SettleStable: a.SettleStable, SettleTimeout: a.SettleTimeout}
		Expect(restarted.Announce(ctx, 3)).To(Succeed())
		Expect(called()[3:]).To(HaveExactElements(
			MatchRegexp(`^vtysh --dryrun`), "reload --reload "+conf, "vtysh -c clear bgp l2vpn evpn * soft out"),
			"FRR runs the file, and no session is reset")
		d, ok := restarted.InForce()
		Expect(ok).To(BeTrue())
		Expect(d).To(BeEquivalentTo(3))

		By("a restarted agent whose FRR runs the file already: no reload at all, which withdraws routes on FRR 8.4")
		Expect(os.WriteFile(filepath.Join(dir, "running"), []byte("frr version 8.4.4\n"+onDisk()), 0o644)).To(Succeed())
		again := &bgpdistance.Announcer{ConfigPath: conf, Vtysh: a.Vtysh, Reload: a.Reload, SettleStable: a.SettleStable, SettleTimeout: a.SettleTimeout}
		Expect(again.Announce(ctx, 3)).To(Succeed())
		Expect(called()).To(HaveLen(6), "nothing but the look at the running configuration")
		d, ok = again.InForce()
		Expect(ok).To(BeTrue())
		Expect(d).To(BeEquivalentTo(3))
		By("one whose FRR runs another distance than the file: reloaded, and the changed prepend sent by a reset")
		running, err := bgpdistance.Render(onDisk(), 5, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, "running"), []byte(running), 0o644)).To(Succeed())
		Expect((&bgpdistance.Announcer{ConfigPath: conf, Vtysh: a.Vtysh, Reload: a.Reload, SettleStable: a.SettleStable, SettleTimeout: a.SettleTimeout}).Announce(ctx, 3)).To(Succeed())
		Expect(called()[6:]).To(HaveExactElements(
			MatchRegexp(`^vtysh --dryrun`), "reload --reload "+conf, "vtysh -c clear bgp l2vpn evpn *"))
		Expect(os.Remove(filepath.Join(dir, "running"))).To(Succeed())

		By("a file an older agent wrote, with the distance but without the delay-timer: written, no reset")
		older := strings.Replace(onDisk(), "bgp route-map delay-timer 0\n", "", 1)
		Expect(older).NotTo(ContainSubstring("delay-timer"))
		Expect(os.WriteFile(conf, []byte(older), 0o640)).To(Succeed())
		upgraded := &bgpdistance.Announcer{ConfigPath: conf, Vtysh: a.Vtysh, Reload: a.Reload, SettleStable: a.SettleStable, SettleTimeout: a.SettleTimeout}
		Expect(upgraded.Announce(ctx, 3)).To(Succeed())
		Expect(onDisk()).To(ContainSubstring("\nbgp route-map delay-timer 0\n"))
		Expect(called()[9:]).To(HaveExactElements(
			MatchRegexp(`^vtysh --dryrun`), "reload --reload "+conf, "vtysh -c clear bgp l2vpn evpn * soft out"))
	})

	It("tells the distance in force only once bgpd sends its routes again after the reload's withdrawal", func(ctx context.Context) {
		By("the reload withdraws the routes, as FRR 8.4's does with an unchanged as-path access-list")
		a.Reload = filepath.Join(dir, "withdrawing-reload")
		Expect(os.WriteFile(a.Reload, []byte("#!/bin/sh\necho \"reload $*\" >>"+calls+"\n"+
			"echo '{\"peers\":{\"lan0\":{\"state\":\"Established\",\"pfxSnt\":0}}}' >"+filepath.Join(dir, "summary.new")+
			" && mv "+filepath.Join(dir, "summary.new")+" "+filepath.Join(dir, "summary")+"\n"), 0o755)).To(Succeed())
		var restored time.Time
		back := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(back)
			Eventually(called).Should(ContainElement(HavePrefix("reload")))
			// The withdrawal lasts a second, as bgpd's does for seconds.
			time.Sleep(time.Second)
			restored = time.Now()
			sending(1)
		}()
		Expect(a.Announce(ctx, 3)).To(Succeed())
		returned := time.Now()
		<-back
		Expect(returned).To(BeTemporally(">", restored.Add(300*time.Millisecond)), "not before the routes are out again and stayed out")
		Expect(inForce()).To(BeEquivalentTo(3))

		By("routes that do not come back: the distance is not in force, and the error says which peer")
		a.SettleTimeout = time.Second
		err := a.Announce(ctx, 0)
		Expect(err).To(MatchError(And(ContainSubstring("distance 0 after the sessions' reset: bgpd did not send its routes again within 1s"), ContainSubstring("lan0 (0 of 1 prefixes)"))))
		_, ok := a.InForce()
		Expect(ok).To(BeFalse())
	})

	It("waits through a summary bgpd cannot give while the reload changes it", func(ctx context.Context) {
		a.Reload = filepath.Join(dir, "busy-reload")
		Expect(os.WriteFile(a.Reload, []byte("#!/bin/sh\necho \"reload $*\" >>"+calls+"\n: >"+filepath.Join(dir, "summary")+"\n"), 0o755)).To(Succeed())
		back := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(back)
			Eventually(called).Should(ContainElement(HavePrefix("reload")))
			time.Sleep(time.Second) // a few polls answered with nothing
			sending(1)
		}()
		Expect(a.Announce(ctx, 3)).To(Succeed())
		<-back
		Expect(inForce()).To(BeEquivalentTo(3))

		By("a summary that never comes back: the error says so")
		a.SettleTimeout = time.Second
		Expect(os.WriteFile(a.Reload, []byte("#!/bin/sh\n: >"+filepath.Join(dir, "summary")+"\n"), 0o755)).To(Succeed())
		Expect(a.Announce(ctx, 0)).To(MatchError(And(ContainSubstring("bgpd did not send its routes again within 1s"), ContainSubstring("bgpd's summary: unexpected end of JSON input"))))
	})

	It("keeps the old configuration when FRR refuses the new one", func(ctx context.Context) {
		Expect(a.Announce(ctx, 3)).To(Succeed())
		before := onDisk()
		a.Vtysh = program("vtysh", 1, "% Unknown command: set as-path prepend")
		err := a.Announce(ctx, 8)
		Expect(err).To(MatchError(And(ContainSubstring("FRR refuses the configuration with distance 8"), ContainSubstring("% Unknown command"))))
		Expect(onDisk()).To(Equal(before))
		Expect(inForce()).To(BeEquivalentTo(3), "the old distance stays in force")
		Expect(called()).To(HaveLen(4), "no reload after the refused check")
		Expect(called()[3]).To(HavePrefix("vtysh --dryrun"))
	})

	It("puts the old configuration back when the reload fails, and tells that none is known to be in force", func(ctx context.Context) {
		a.Reload = program("reload", 1, "bgpd not running")
		err := a.Announce(ctx, 2)
		Expect(err).To(MatchError(And(ContainSubstring("FRR's reload with distance 2"), ContainSubstring("bgpd not running"))))
		Expect(onDisk()).To(Equal(original))
		_, ok := a.InForce()
		Expect(ok).To(BeFalse())
		Expect(called()).To(HaveLen(3), "check, reload, and the reload of the old configuration")
	})

	It("refuses a configuration it cannot announce on, changing nothing", func(ctx context.Context) {
		Expect(os.WriteFile(conf, []byte("frr version 8.4\n!\nline vty\n"), 0o640)).To(Succeed())
		Expect(a.Announce(ctx, 1)).To(MatchError(ContainSubstring("no BGP instance of the default VRF")))
		Expect(called()).To(BeEmpty())
		Expect(onDisk()).To(Equal("frr version 8.4\n!\nline vty\n"))
	})
})

var _ = Describe("Prepare", func() {
	It("writes the longest distance into a configuration without one, and keeps one that has it", func() {
		conf := filepath.Join(GinkgoT().TempDir(), "frr.conf")
		Expect(os.WriteFile(conf, []byte(firewallConfigs()["frr.conf.firewall"]), 0o640)).To(Succeed())
		wrote, err := bgpdistance.Prepare(conf, "", bgpdistance.MaxDistance)
		Expect(err).NotTo(HaveOccurred())
		Expect(wrote).To(BeTrue())
		data, err := os.ReadFile(conf)
		Expect(err).NotTo(HaveOccurred())
		d, ok := bgpdistance.Distance(string(data))
		Expect(ok).To(BeTrue())
		Expect(d).To(Equal(bgpdistance.MaxDistance))

		By("after a reboot, the distance last in force stays")
		zero, err := bgpdistance.Render(string(data), 0, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(conf, []byte(zero), 0o640)).To(Succeed())
		wrote, err = bgpdistance.Prepare(conf, "", bgpdistance.MaxDistance)
		Expect(err).NotTo(HaveOccurred())
		Expect(wrote).To(BeFalse())
		data, err = os.ReadFile(conf)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(Equal(zero))
	})
})
