package bgpdistance_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bgpdistance"
)

// metalNetworker is the module whose test data are the FRR configurations
// metal-stack renders for firewalls.
const metalNetworker = "github.com/metal-stack/metal-networker@v0.46.0"

// firewallConfigs are metal-networker's own rendered firewall FRR
// configurations (pkg/netconf/testdata/frr.conf.firewall*), from the module
// proxy: what the agent edits on a real firewall, not our idea of it.
func firewallConfigs() map[string]string {
	GinkgoHelper()
	out, err := exec.Command("go", "mod", "download", "-json", metalNetworker).Output()
	Expect(err).NotTo(HaveOccurred(), "downloading %s from the module proxy", metalNetworker)
	var mod struct{ Dir string }
	Expect(json.Unmarshal(out, &mod)).To(Succeed())
	files, err := filepath.Glob(filepath.Join(mod.Dir, "pkg", "netconf", "testdata", "frr.conf.firewall*"))
	Expect(err).NotTo(HaveOccurred())
	Expect(files).NotTo(BeEmpty())
	confs := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		confs[filepath.Base(f)] = string(data)
	}
	return confs
}

// lines are conf's lines without the blank ones.
func lines(conf string) []string {
	var out []string
	for _, l := range strings.Split(conf, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// evpnBlock is the l2vpn evpn address family of the default VRF's instance.
func evpnBlock(conf string) []string {
	var out []string
	inRouter, inAF := false, false
	for _, l := range strings.Split(conf, "\n") {
		switch {
		case strings.HasPrefix(l, "router bgp ") && !strings.Contains(l, " vrf "):
			inRouter = true
		case inRouter && l != "" && !strings.HasPrefix(l, " "):
			inRouter = false
		case inRouter && strings.TrimSpace(l) == "address-family l2vpn evpn":
			inAF = true
		case inAF && strings.TrimSpace(l) == "exit-address-family":
			inAF = false
		case inAF:
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

var _ = Describe("Render", func() {
	It("prepends the firewall's own AS on what it announces to the fabric, in each of metal-networker's firewall configurations", func() {
		for name, conf := range firewallConfigs() {
			By(name)
			asn := strings.Fields(lines(conf)[slicesIndex(lines(conf), "router bgp ")])[2]
			for d := 0; d <= bgpdistance.MaxDistance; d++ {
				got, err := bgpdistance.Render(conf, d, bgpdistance.DefaultPeerGroup)
				Expect(err).NotTo(HaveOccurred())
				Expect(evpnBlock(got)).To(ContainElement("neighbor FABRIC route-map "+bgpdistance.RouteMap+" out"), name)
				n, ok := bgpdistance.Distance(got)
				Expect(ok).To(BeTrue())
				Expect(n).To(Equal(d))
				if d > 0 {
					Expect(got).To(ContainSubstring("\n set as-path prepend " + strings.TrimSpace(strings.Repeat(asn+" ", d)) + "\n"))
				} else {
					Expect(got).NotTo(ContainSubstring("as-path prepend"))
				}
				By("keeping every line metal-stack wrote, in its order")
				Expect(subsequence(lines(conf), lines(got))).To(BeTrue(), "%s with distance %d:\n%s", name, d, got)
			}
			By("changing the distance replaces the agent's route-map and adds nothing twice")
			three, err := bgpdistance.Render(conf, 3, bgpdistance.DefaultPeerGroup)
			Expect(err).NotTo(HaveOccurred())
			zero, err := bgpdistance.Render(conf, 0, bgpdistance.DefaultPeerGroup)
			Expect(err).NotTo(HaveOccurred())
			again, err := bgpdistance.Render(three, 0, bgpdistance.DefaultPeerGroup)
			Expect(err).NotTo(HaveOccurred())
			Expect(again).To(Equal(zero))
			same, err := bgpdistance.Render(zero, 0, bgpdistance.DefaultPeerGroup)
			Expect(err).NotTo(HaveOccurred())
			Expect(same).To(Equal(zero))
		}
	})

	It("keeps bgpd from sending a changed route-map by itself: one delay-timer of 0, whatever was there", func() {
		conf := firewallConfigs()["frr.conf.firewall"]
		own := strings.Replace(conf, "router bgp ", "bgp route-map delay-timer 5\n!\nrouter bgp ", 1)
		for _, c := range []string{conf, own} {
			three, err := bgpdistance.Render(c, 3, "")
			Expect(err).NotTo(HaveOccurred())
			zero, err := bgpdistance.Render(three, 0, "")
			Expect(err).NotTo(HaveOccurred())
			for _, got := range []string{three, zero} {
				Expect(strings.Count(got, "bgp route-map delay-timer")).To(Equal(1))
				Expect(got).To(ContainSubstring("\nbgp route-map delay-timer 0\n"))
			}
		}
	})

	It("matches every route, and drops the route target list an earlier agent wrote", func() {
		for name, conf := range firewallConfigs() {
			By(name)
			asn, err := strconv.ParseUint(strings.Fields(lines(conf)[slicesIndex(lines(conf), "router bgp ")])[2], 10, 32)
			Expect(err).NotTo(HaveOccurred())
			// What an agent of 5c8ca43 wrote: it kept a VRF's routes from the
			// fabric whenever bgpd derived that VRF's route target otherwise.
			earlier := strings.Replace(conf, "line vty", fmt.Sprintf("bgp extcommunity-list expanded %s seq 5 permit RT:%d:\nroute-map %s permit 10\n match extcommunity %s\n!\nline vty",
				bgpdistance.OwnRoutes, asn%65536, bgpdistance.RouteMap, bgpdistance.OwnRoutes), 1)
			Expect(earlier).To(ContainSubstring(bgpdistance.OwnRoutes))
			for _, d := range []int{0, 3} {
				got, err := bgpdistance.Render(earlier, d, "")
				Expect(err).NotTo(HaveOccurred())
				Expect(got).NotTo(ContainSubstring(bgpdistance.OwnRoutes))
				Expect(got).To(MatchRegexp(`(?m)^route-map `+bgpdistance.RouteMap+` permit 10\n( set as-path prepend [0-9 ]+\n)?!\n`), "the one entry matches every route")
				Expect(regexp.MustCompile(`(?m)^route-map `+bgpdistance.RouteMap+` `).FindAllString(got, -1)).To(HaveLen(1), "no other entry of the route-map")
				fresh, err := bgpdistance.Render(conf, d, "")
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(Equal(fresh))
			}
		}
	})

	It("tells that a configuration without the agent's route-map announces no distance", func() {
		for _, conf := range firewallConfigs() {
			_, ok := bgpdistance.Distance(conf)
			Expect(ok).To(BeFalse())
		}
	})

	DescribeTable("refuses what it cannot announce on, naming it",
		func(edit func(string) string, distance int, msg string) {
			conf := firewallConfigs()["frr.conf.firewall"]
			_, err := bgpdistance.Render(edit(conf), distance, bgpdistance.DefaultPeerGroup)
			Expect(err).To(MatchError(ContainSubstring(msg)))
		},
		Entry("a distance above the longest", func(c string) string { return c }, 9, "distance 9: must be within [0, 8]"),
		Entry("a negative distance", func(c string) string { return c }, -1, "distance -1"),
		Entry("no BGP", func(c string) string { return strings.ReplaceAll(c, "router bgp", "! router bgp") }, 0, "no BGP instance of the default VRF"),
		Entry("an empty configuration", func(string) string { return "" }, 0, "no BGP instance"),
		Entry("no fabric peer group", func(c string) string { return strings.ReplaceAll(c, "FABRIC", "SPINE") }, 0, `has no peer group "FABRIC"`),
		Entry("no EVPN", func(c string) string {
			return strings.Replace(c, " address-family l2vpn evpn\n  neighbor FABRIC activate", " address-family ipv4 multicast\n  neighbor FABRIC activate", 1)
		}, 0, "has no address-family l2vpn evpn"),
		Entry("another outbound route-map on EVPN", func(c string) string {
			return strings.Replace(c, " address-family l2vpn evpn\n", " address-family l2vpn evpn\n  neighbor FABRIC route-map mine out\n", 1)
		}, 0, `already applies another outbound route-map to FABRIC: "neighbor FABRIC route-map mine out"`),
	)
})

func slicesIndex(ls []string, prefix string) int {
	for i, l := range ls {
		if strings.HasPrefix(l, prefix) && !strings.Contains(l, " vrf ") {
			return i
		}
	}
	Fail("no line " + prefix)
	return -1
}

// subsequence tells whether every line of want appears in got, in order.
func subsequence(want, got []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}
