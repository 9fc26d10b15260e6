package metal_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	ignitionv24 "github.com/flatcar/ignition/config/v2_4"
	ignitiontypes "github.com/flatcar/ignition/config/v2_4/types"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/metal"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// parse reads the userdata as metal-stack's installer does, with
// flatcar/ignition v0.36.2's config/v2_4, and wants neither an error nor any
// entry in its report (a warning included).
func parse(raw []byte) ignitiontypes.Config {
	GinkgoHelper()
	cfg, report, err := ignitionv24.Parse(raw)
	Expect(err).NotTo(HaveOccurred(), report.String())
	Expect(report.Entries).To(BeEmpty(), report.String())
	return cfg
}

func unitNamed(cfg ignitiontypes.Config, name string) ignitiontypes.Unit {
	GinkgoHelper()
	for _, u := range cfg.Systemd.Units {
		if u.Name == name {
			return u
		}
	}
	Fail("no unit " + name)
	return ignitiontypes.Unit{}
}

func fileNamed(cfg ignitiontypes.Config, path string) ignitiontypes.File {
	GinkgoHelper()
	for _, f := range cfg.Storage.Files {
		if f.Path == path {
			return f
		}
	}
	Fail("no file " + path)
	return ignitiontypes.File{}
}

var _ = Describe("Userdata", func() {
	files := []machine.File{
		{Path: agentconfigv1alpha1.ConfigPath, Content: agentConfig, Mode: 0o600},
		{Path: agentconfigv1alpha1.BootstrapKubeconfigPath, Content: []byte("k: v\n"), Mode: 0o600},
	}

	It("is Ignition 2.4.0, which metal-stack's installer parses without an error or a warning; a 3.x config it refuses", func() {
		raw, err := metal.Userdata(files, metal.Setup{DefaultRouteVRF: "vrf104009"})
		Expect(err).NotTo(HaveOccurred())
		cfg := parse(raw)
		Expect(cfg.Ignition.Version).To(Equal("2.4.0"))
		f := fileNamed(cfg, agentconfigv1alpha1.BootstrapKubeconfigPath)
		Expect(f.Filesystem).To(Equal("root"))
		Expect(*f.Mode).To(Equal(0o600))
		data, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(f.Contents.Source, "data:;base64,"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(Equal("k: v\n"))

		By("the same files as Ignition 3.5.0, what the extension wrote before: the installer's parser refuses them")
		var v3 map[string]any
		Expect(json.Unmarshal(raw, &v3)).To(Succeed())
		v3["ignition"] = map[string]any{"version": "3.5.0"}
		raw3, err := json.Marshal(v3)
		Expect(err).NotTo(HaveOccurred())
		_, _, err = ignitionv24.Parse(raw3)
		Expect(err).To(HaveOccurred())
	})

	It("enables the boot step after nftables.service and before the network, again on every nftables reload, and the agent in the default route's VRF", func() {
		raw, err := metal.Userdata(files, metal.Setup{DefaultRouteVRF: "vrf104009"})
		Expect(err).NotTo(HaveOccurred())
		cfg := parse(raw)
		boot := unitNamed(cfg, agentconfigv1alpha1.BootUnit)
		Expect(*boot.Enabled).To(BeTrue())
		Expect(boot.Contents).To(And(
			ContainSubstring("\nDefaultDependencies=no\n"),
			ContainSubstring("\nAfter=local-fs.target nftables.service firewall-agent-install.service\n"),
			ContainSubstring("\nBefore=network-pre.target shutdown.target\n"),
			ContainSubstring("\nPartOf=nftables.service\nReloadPropagatedFrom=nftables.service\n"),
			ContainSubstring("\nExecStart=/usr/local/bin/firewall-agent boot --last-good-ruleset /var/lib/firewall-agent/last-good-ruleset.json --config /etc/firewall-agent/config.yaml --remove-userdata\n"),
			ContainSubstring("\nExecReload=/usr/local/bin/firewall-agent boot --last-good-ruleset /var/lib/firewall-agent/last-good-ruleset.json\n"),
		))
		agent := unitNamed(cfg, agentconfigv1alpha1.AgentUnit)
		Expect(*agent.Enabled).To(BeTrue())
		Expect(agent.Contents).To(And(
			ContainSubstring("\nExecStart=/bin/ip vrf exec vrf104009 /usr/local/bin/firewall-agent --config /etc/firewall-agent/config.yaml\n"),
			ContainSubstring("\nRestart=always\n"),
			ContainSubstring("\nRequires=firewall-agent-boot.service\n"),
		))

		By("the closed table goes where nftables.service loads it with the image's rules")
		closed := fileNamed(cfg, metal.ClosedTablePath)
		Expect(*closed.Mode).To(Equal(0o644))
		Expect(closed.Contents.Source).To(Equal("data:;base64," + base64.StdEncoding.EncodeToString([]byte(ruleset.Render(ruleset.Closed())))))

		By("the network and BGP require the boot step; firewall-controller and the droptailer never start beside the agent")
		for _, name := range []string{"systemd-networkd.service", "frr.service"} {
			u := unitNamed(cfg, name)
			Expect(u.Contents).To(BeEmpty(), "the image's unit stays")
			Expect(u.Dropins).To(ConsistOf(ignitiontypes.SystemdDropin{Name: "10-firewall-agent.conf",
				Contents: "[Unit]\nRequires=firewall-agent-boot.service\nAfter=firewall-agent-boot.service\n"}))
		}
		for _, name := range []string{"firewall-controller.service", "droptailer.service"} {
			u := unitNamed(cfg, name)
			Expect(u.Contents).To(BeEmpty())
			Expect(u.Enabled).To(BeNil(), "what the installer enables stays enabled")
			Expect(u.Mask).To(BeFalse(), "the installer renders the unit after the userdata: a mask would be undone")
			Expect(u.Dropins).To(ConsistOf(ignitiontypes.SystemdDropin{Name: "10-firewall-agent.conf",
				Contents: "[Unit]\nConditionPathExists=!/etc/firewall-agent/config.yaml\n"}))
		}

		By("without a default route's VRF the agent runs in the default VRF")
		raw, err = metal.Userdata(files, metal.Setup{})
		Expect(err).NotTo(HaveOccurred())
		Expect(unitNamed(parse(raw), agentconfigv1alpha1.AgentUnit).Contents).To(ContainSubstring("\nExecStart=/usr/local/bin/firewall-agent --config"))
	})

	It("downloads a release for an image without the agent: Ignition checks its SHA-512, the install unit the operator's signature", func() {
		withKey := append(files, machine.File{Path: agentconfigv1alpha1.UpdatePublicKeyPath, Content: []byte("key"), Mode: 0o600})
		rel := &metal.Release{Version: "v1.2.3", URL: "https://releases.example.com/firewall-agent", SHA256: strings.Repeat("a", 64), SHA512: strings.Repeat("b", 128)}
		raw, err := metal.Userdata(withKey, metal.Setup{Release: rel})
		Expect(err).NotTo(HaveOccurred())
		cfg := parse(raw)
		bin := fileNamed(cfg, "/var/lib/firewall-agent/release/firewall-agent")
		Expect(bin.Contents.Source).To(Equal(rel.URL))
		Expect(*bin.Contents.Verification.Hash).To(Equal("sha512-" + rel.SHA512))
		Expect(fileNamed(cfg, "/var/lib/firewall-agent/release/firewall-agent.sig").Contents.Source).To(Equal(rel.URL + ".sig"))
		msg := fileNamed(cfg, "/var/lib/firewall-agent/release/message")
		Expect(msg.Contents.Source).To(Equal("data:;base64," + base64.StdEncoding.EncodeToString(
			[]byte("firewall-agent-release-v1\nversion: v1.2.3\nsha256: "+rel.SHA256+"\n"))))
		install := unitNamed(cfg, agentconfigv1alpha1.InstallUnit)
		Expect(*install.Enabled).To(BeTrue())
		Expect(install.Contents).To(And(
			ContainSubstring("\nBefore=firewall-agent-boot.service\n"),
			ContainSubstring("\nExecStart=/usr/bin/openssl pkeyutl -verify -pubin -inkey /etc/firewall-agent/update-key.pem -rawin -in /var/lib/firewall-agent/release/message -sigfile /var/lib/firewall-agent/release/firewall-agent.sig\n"),
			ContainSubstring("\nExecStart=/usr/bin/install -m 0755 -T /var/lib/firewall-agent/release/firewall-agent /usr/local/bin/firewall-agent\n"),
		))

		By("no release without the operator's key to check it with")
		_, err = metal.Userdata(files, metal.Setup{Release: rel})
		Expect(err).To(MatchError(ContainSubstring("--agent-update-public-key")))
	})

	It("stays within the metal-api's 32 KiB of base64, and says so when it does not", func() {
		raw, err := metal.Userdata(files, metal.Setup{DefaultRouteVRF: "vrf104009"})
		Expect(err).NotTo(HaveOccurred())
		Expect(base64.StdEncoding.EncodedLen(len(raw))).To(BeNumerically("<", metal.MaxUserdataBytes))
		big := append(files, machine.File{Path: "/etc/big", Content: make([]byte, 30<<10), Mode: 0o600})
		_, err = metal.Userdata(big, metal.Setup{})
		Expect(err).To(MatchError(ContainSubstring("more than the metal-api's 32768")))
	})
})
