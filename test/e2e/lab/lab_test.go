package lab_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/metal"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/dnsproxy/dnsproxytest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/selfupdate"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalclient"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/lab"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalimage"
)

const project = "p1"

// The firewall machine as metal-stack builds it: the metal provider
// allocates in the in-process metal-api, the lab installs and boots exactly
// that allocation's userdata on metal-stack's firewall image (with the agent
// put in by the image recipe, or downloaded by the userdata onto the stock
// image), the agent reaches its seed and shoot through the VRF of the
// default route, and real packets between the node and this host (the
// internet) show what is forwarded, and when.
var _ = Describe("Firewall machines in the lab", Ordered, func() {
	var (
		l         *lab.Lab
		probes    *lab.Probes
		hw        *lab.Hardware
		server    *metalapi.Server
		cSeed     client.Client
		cShoot    client.Client
		ex        *extensionsv1alpha1.Extension
		namespace = "shoot--lab--a"
		release   struct{ url, sha256, sha512 string }
		tcpSeen   = map[string]bool{}
		resolver  *dnsproxytest.Server
		tcpMu     sync.Mutex
	)
	const (
		// The image with the agent (the image recipe) and the stock one.
		recipeImage = metalapi.Image
		stockImage  = metalapi.NextImage
		// A name this host's resolver answers with this host's address, and
		// the port a policy allows to it by that name only.
		fqdnName = "allowed.lab"
		fqdnPort = "7001"
	)
	providerConfig := func(image, extra string) []byte {
		return fmt.Appendf(nil, `{"size":%q,"image":%q,"partition":"partition-a","project":%q,"networks":[%q,%q],"internalPrefixes":["10.10.0.0/16"],"dns":{"upstreams":[%q]}%s}`,
			metalapi.Size, image, project, metalapi.PrivateNetwork(project), metalapi.Internet, lab.HostAddress, extra)
	}
	firewallOrNil := func(ctx context.Context, name string) *firewallv1alpha1.Firewall {
		fw := &firewallv1alpha1.Firewall{}
		if err := cSeed.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, fw); err != nil {
			return nil
		}
		return fw
	}
	firewalls := func(ctx context.Context) []firewallv1alpha1.Firewall {
		GinkgoHelper()
		fws, err := framework.Firewalls(ctx, cSeed, namespace)
		Expect(err).NotTo(HaveOccurred())
		return fws
	}
	readyOn := func(ctx context.Context, image string) func(Gomega) *firewallv1alpha1.Firewall {
		return func(g Gomega) *firewallv1alpha1.Firewall {
			for _, fw := range firewalls(ctx) {
				if fw.Spec.Image == image && meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionReady) {
					return &fw
				}
			}
			g.Expect(firewalls(ctx)).To(ContainElement(HaveField("Spec.Image", image)), "no firewall of %s yet", image)
			return nil
		}
	}
	machineOf := func(fw *firewallv1alpha1.Firewall) *lab.Machine {
		GinkgoHelper()
		Expect(fw.Status.MachineStatus).NotTo(BeNil())
		m := hw.Machine(fw.Status.MachineStatus.MachineID)
		Expect(m).NotTo(BeNil(), "the lab booted machine %s", fw.Status.MachineStatus.MachineID)
		return m
	}
	exec := func(ctx context.Context, m *lab.Machine, cmd string) string {
		GinkgoHelper()
		out, err := m.Exec(ctx, cmd)
		Expect(err).NotTo(HaveOccurred())
		return strings.TrimSpace(out)
	}
	// flowing says the allowed probes arrive (more of them than before).
	flowing := func(port int) {
		GinkgoHelper()
		before := probes.Count(port)
		Eventually(func() int { return probes.Count(port) }).WithTimeout(3*time.Minute).WithPolling(time.Second).
			Should(BeNumerically(">", before+10), "probes to port %d arrive", port)
	}
	connectFromNode := func(ctx context.Context) error {
		_, err := l.Run(ctx, fmt.Sprintf("ip netns exec node timeout 5 bash -c '</dev/tcp/%s/7000'", lab.HostAddress))
		return err
	}

	env := &labEnv{namespace: namespace, recipeImage: recipeImage, stockImage: stockImage,
		firewalls: firewalls, firewallOrNil: firewallOrNil, readyOn: readyOn, machineOf: machineOf, exec: exec, providerConfig: providerConfig}

	BeforeAll(func(ctx SpecContext) {
		share := GinkgoT().TempDir()
		var err error
		By("booting the lab: the leaf, the node behind the tenant VRF, this host behind the internet VRF")
		l, err = lab.Start(ctx, lab.Options{
			Dir: labDir, Share: share, TenantVRF: metalapi.PrivateVRF(0), InternetVRF: metalapi.InternetVRF,
			Routes: []netip.Prefix{netip.MustParsePrefix("100.64.0.0/16")},
			Log:    func(f string, a ...any) { GinkgoWriter.Printf(f+"\n", a...) },
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(l.Close)
		probes, err = l.StartProbes(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(probes.Close)
		for _, port := range []string{"7000", fqdnPort} {
			tcp, err := net.Listen("tcp", net.JoinHostPort(lab.HostAddress.String(), port))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(tcp.Close)
			go func() {
				for {
					c, err := tcp.Accept()
					if err != nil {
						return
					}
					host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
					tcpMu.Lock()
					tcpSeen[host] = true
					tcpMu.Unlock()
					_ = c.Close()
				}
			}()
		}
		By("a resolver on this host, the internet: the nodes' resolver, and the DNS proxy's upstream")
		resolver, err = dnsproxytest.Start(net.JoinHostPort(lab.HostAddress.String(), "53"),
			dnsproxytest.Answer(fqdnName+". 60 IN A "+lab.HostAddress.String()))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(resolver.Close)

		By("serving an agent release, signed with the operator's key, for the stock image")
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		der, err := x509.MarshalPKIXPublicKey(pub)
		Expect(err).NotTo(HaveOccurred())
		updateKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		bin, err := os.ReadFile(agentBinary)
		Expect(err).NotTo(HaveOccurred())
		s256, s512 := sha256.Sum256(bin), sha512.Sum512(bin)
		release.sha256, release.sha512 = hex.EncodeToString(s256[:]), hex.EncodeToString(s512[:])
		releases := filepath.Join(GinkgoT().TempDir(), "releases")
		Expect(os.MkdirAll(releases, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(releases, "firewall-agent"), bin, 0o644)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(releases, "firewall-agent.sig"), ed25519.Sign(priv, selfupdate.SignedMessage(agentVersion, release.sha256)), 0o644)).To(Succeed())
		rl, err := net.Listen("tcp", net.JoinHostPort(lab.HostAddress.String(), "0"))
		Expect(err).NotTo(HaveOccurred())
		rs := &http.Server{Handler: http.FileServer(http.Dir(releases)), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = rs.Serve(rl) }()
		DeferCleanup(rs.Close)
		release.url = "http://" + rl.Addr().String() + "/firewall-agent"

		By("starting the shoot's and the seed's control planes where the firewalls reach them: this host's lab address")
		shoot, err := framework.StartShootAt("shoot", lab.HostAddress.String())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(shoot.Stop()).To(Succeed()) })
		seed, err := framework.StartSeedAt("seed", lab.HostAddress.String())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(seed.Stop()).To(Succeed()) })
		cSeed, err = framework.SeedClient(seed)
		Expect(err).NotTo(HaveOccurred())
		cShoot, err = client.New(shoot.Config, client.Options{Scheme: framework.ShootScheme})
		Expect(err).NotTo(HaveOccurred())

		By("starting the metal-api, whose hardware is the lab: the image recipe's image has the agent, the stock image has not")
		recipe, err := lab.RecipeImage(lab.RecipePath, agentBinary)
		Expect(err).NotTo(HaveOccurred())
		hw = &lab.Hardware{Lab: l, Images: map[string]lab.Image{recipeImage: recipe},
			// What the image's own table lets through, and no policy of the agent:
			// the forbidden probes.
			FirewallRules: lab.ProbeFirewallRules(),
			// A boot under the distance specs' streams takes minutes of emulation.
			BootTimeout: 12 * time.Minute}
		opts := metalapi.Inventory(project)
		opts.Hardware = hw
		// Its errors: a machine that did not boot, a violation of the spec.
		opts.Log = slog.New(slog.NewTextHandler(GinkgoWriter, nil))
		server, err = metalapi.New(opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			server.Close()
			server.ExpectNoViolations()
		})
		provider, err := metal.New(metal.Options{URL: server.URL, AuthType: metalclient.AuthTypeEdit, Key: metalclient.StaticKey(metalapi.EditKey), AnnounceBy: announceBy()})
		Expect(err).NotTo(HaveOccurred())
		stop, err := framework.StartExtension(seed, shoot, framework.ExtensionOptions{Provider: provider, AgentUpdatePublicKey: updateKey, MaxReplacements: 1})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(stop()).To(Succeed()) })
		Expect(framework.ShootNamespace{Name: namespace, Shoot: shoot}.Create(ctx, cSeed)).To(Succeed())
		env.l, env.probes, env.cSeed, env.cShoot, env.hw = l, probes, cSeed, cShoot, hw
		env.extension = func() *extensionsv1alpha1.Extension { return ex }
		env.stockRelease = func() string {
			return fmt.Sprintf(`,"agentVersion":%q,"agentURL":%q,"agentSHA256":%q,"agentSHA512":%q`, agentVersion, release.url, release.sha256, release.sha512)
		}
	}, NodeTimeout(10*time.Minute))

	AfterAll(func() {
		if probes == nil {
			return // the lab did not start: BeforeAll's failure says why
		}
		Expect(probes.Forbidden()).To(Succeed(), "at no moment of the suite was a packet forwarded without the agent's table")
	})
	AfterEach(func(ctx SpecContext) {
		// LAB_HOLD keeps a failed lab up for a person to look at.
		if d, err := time.ParseDuration(os.Getenv("LAB_HOLD")); err == nil && CurrentSpecReport().Failed() && l != nil {
			GinkgoWriter.Printf("holding the lab for %s: its guest agent socket is %s\n", d, l.GuestAgentSocket())
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
	}, NodeTimeout(time.Hour))

	It("allocates, boots from that userdata, and the agent gets its certificate through the default route's VRF", func(ctx SpecContext) {
		var err error
		ex, err = framework.Reconcile(ctx, cSeed, namespace, "firewall", providerConfig(recipeImage, ""))
		Expect(err).NotTo(HaveOccurred())
		var fw *firewallv1alpha1.Firewall
		Eventually(ctx, readyOn(ctx, recipeImage)).WithTimeout(10*time.Minute).WithPolling(2*time.Second).Should(Not(BeNil()), func() string {
			return describeFirewalls(firewalls(ctx))
		})
		fw = readyOn(ctx, recipeImage)(Default)
		Expect(fw.Status.MachineStatus).To(HaveField("LastEvent.Event", "Phoned Home"))
		Expect(meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionSeedConnected)).To(BeTrue())
		m := machineOf(fw)

		userdata := server.Firewall(fw.Status.MachineStatus.MachineID).Allocation.UserData
		Expect(len(userdata)).To(BeNumerically("<", metal.MaxUserdataBytes))
		GinkgoWriter.Printf("the allocation's userdata: %d bytes of base64\n", len(userdata))

		By("ignition v0.36.2 ran the userdata without an error")
		log, err := m.IgnitionLog(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(log).To(And(
			ContainSubstring(`using config file at "config.ign"`),
			ContainSubstring(`[finished] writing file "/etc/firewall-agent/config.yaml"`),
			ContainSubstring(`[finished] enabling unit "firewall-agent.service"`),
			ContainSubstring(`[finished] writing systemd drop-in "10-firewall-agent.conf" at "etc/systemd/system/firewall-controller.service.d/10-firewall-agent.conf"`)))
		Expect(log).NotTo(MatchRegexp(`(?m)^(ERROR|CRITICAL|WARNING) `))

		By("the agent runs in the VRF of the default route: the seed is reachable from nowhere else")
		Expect(exec(ctx, m, "ip vrf identify $(systemctl show -p MainPID --value firewall-agent.service)")).To(Equal(fmt.Sprintf("vrf%d", metalapi.InternetVRF)))
		Expect(exec(ctx, m, "ip route show table main default")).To(BeEmpty())

		By("the boot step removed the userdata the installer left, with its boot credential")
		Expect(exec(ctx, m, "ls /config.ign /etc/metal/userdata 2>&1 || true")).To(ContainSubstring("No such file"))
		Expect(exec(ctx, m, "cat "+metalimage.MachineAllocationPath)).To(And(ContainSubstring("hostname: "+fw.Name), Not(ContainSubstring("userdata"))))

		By("firewall-controller and the droptailer never started")
		for _, unit := range []string{metalimage.FirewallControllerUnit, metalimage.DroptailerUnit} {
			Expect(exec(ctx, m, "systemctl is-enabled "+unit)).To(Equal("enabled"), "as the installer left it")
			Expect(strings.Split(exec(ctx, m, "systemctl show -p ConditionResult -p NRestarts -p ExecMainStartTimestampMonotonic "+unit), "\n")).To(ConsistOf(
				"ConditionResult=no", "NRestarts=0", "ExecMainStartTimestampMonotonic=0"))
		}

		By("the image's table lets through what the agent's decides on, in the kernel only")
		Expect(exec(ctx, m, "nft list chain inet metal forward")).To(ContainSubstring("policy accept"))
		Expect(exec(ctx, m, "grep -c 'policy drop' "+metalimage.NftablesRulesPath)).To(Equal("2"), "the installer's file keeps the image's drops")
		Expect(probes.Count(lab.ToHostAllowed)).To(BeZero(), "no policy allows it yet")
		Expect(probes.Forbidden()).To(Succeed())
	})

	It("enforces the shoot owner's policy and LoadBalancer Services on real packets through the leaf, and drops the rest", func(ctx SpecContext) {
		policy := &firewallv1alpha1.ClusterwideNetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "lab", Namespace: firewallv1alpha1.ClusterwideNetworkPolicyNamespace},
			Spec: firewallv1alpha1.PolicySpec{
				Egress: []firewallv1alpha1.EgressRule{{To: []firewallv1alpha1.IPBlock{{CIDR: lab.HostAddress.String() + "/32"}},
					Ports: []firewallv1alpha1.PolicyPort{{Protocol: "UDP", Port: ptr.To[int32](lab.ToHostAllowed)}, {Protocol: "TCP", Port: ptr.To[int32](7000)}}}},
			},
		}
		Eventually(func() error { return cShoot.Create(ctx, policy) }).Should(Succeed())
		By("a LoadBalancer Service on the node's load balancer address, for this host only")
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: []string{lab.HostAddress.String() + "/32"},
				Ports: []corev1.ServicePort{{Name: "probe", Protocol: corev1.ProtocolUDP, Port: lab.ToNodeAllowed}}},
		}
		Expect(cShoot.Create(ctx, svc)).To(Succeed())
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: lab.LoadBalancerAddress.String()}}
		Expect(cShoot.Status().Update(ctx, svc)).To(Succeed())
		flowing(lab.ToHostAllowed)
		flowing(lab.ToNodeAllowed)
		fw := readyOn(ctx, recipeImage)(Default)
		Expect(probes.Sources(lab.ToHostAllowed)).To(Equal(fw.Status.EgressIPs), "masqueraded to the firewall's internet address")
		Expect(connectFromNode(ctx)).To(Succeed())
		Expect(probes.Forbidden()).To(Succeed())
	})

	It("allows a name through the DNS proxy: queries redirected in the tenant VRF, the resolver asked through the internet VRF (toFQDNs)", func(ctx SpecContext) {
		dial := func() (string, error) {
			out, err := l.Run(ctx, fmt.Sprintf("ip netns exec node /lab/share/labprobe dial %s 3s", net.JoinHostPort(lab.HostAddress.String(), fqdnPort)))
			return strings.TrimSpace(out), err
		}
		Expect(dial()).To(Equal("dropped"), "no policy allows port %s yet", fqdnPort)
		port, err := strconv.Atoi(fqdnPort)
		Expect(err).NotTo(HaveOccurred())
		policy := &firewallv1alpha1.ClusterwideNetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "lab-fqdn", Namespace: firewallv1alpha1.ClusterwideNetworkPolicyNamespace},
			Spec: firewallv1alpha1.PolicySpec{
				Egress: []firewallv1alpha1.EgressRule{{ToFQDNs: []firewallv1alpha1.FQDNSelector{{MatchName: fqdnName}},
					Ports: []firewallv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To(int32(port))}}}},
			},
		}
		Expect(cShoot.Create(ctx, policy)).To(Succeed())
		// Until the agent enforces the policy, an answer allows nothing: ask again.
		Eventually(func(g Gomega) {
			out, err := l.Run(ctx, fmt.Sprintf("ip netns exec node /lab/share/labprobe resolve %s %s", net.JoinHostPort(lab.HostAddress.String(), "53"), fqdnName))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(strings.TrimSpace(out)).To(Equal(lab.HostAddress.String()))
			g.Expect(dial()).To(Equal("connected"))
		}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		fw := readyOn(ctx, recipeImage)(Default)
		var askers []string
		for _, src := range resolver.UDPSources() {
			host, _, err := net.SplitHostPort(src)
			Expect(err).NotTo(HaveOccurred())
			askers = append(askers, host)
		}
		Expect(askers).NotTo(BeEmpty())
		Expect(askers).To(HaveEach(BeElementOf(fw.Status.EgressIPs)),
			"the proxy asks from the firewall's internet address; no query of the node was forwarded")
		Expect(probes.Forbidden()).To(Succeed())
	})

	It("translates to the configured address of a network (SNAT by network)", func(ctx SpecContext) {
		Expect(framework.UpdateProviderConfig(ctx, cSeed, ex, providerConfig(recipeImage, `,"egressRules":[{"networkID":"internet","ips":["100.64.0.250"]}]`))).To(Succeed())
		Eventually(func() bool {
			_ = connectFromNode(ctx)
			tcpMu.Lock()
			defer tcpMu.Unlock()
			return tcpSeen["100.64.0.250"]
		}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(BeTrue())
	})

	It("is back before anything is forwarded after a reload of nftables.service", func(ctx SpecContext) {
		m := machineOf(readyOn(ctx, recipeImage)(Default))
		exec(ctx, m, "systemctl reload nftables.service")
		Eventually(func() string { return exec(ctx, m, "nft list chain inet metal forward") }).Should(ContainSubstring("policy accept"))
		Expect(exec(ctx, m, "nft list tables")).To(ContainSubstring("table inet firewall-agent"))
		flowing(lab.ToHostAllowed)
		Expect(probes.Forbidden()).To(Succeed())
	})

	It("is back before anything is forwarded after a reboot", func(ctx SpecContext) {
		m := machineOf(readyOn(ctx, recipeImage)(Default))
		Expect(m.Reboot(ctx)).To(Succeed())
		Expect(m.WaitBooted(ctx)).To(Equal("running"))
		// The journal's boot ID is the lab machine's kernel's: the boot
		// step's run of this boot is its unit's last invocation.
		Expect(exec(ctx, m, "journalctl --no-pager _SYSTEMD_INVOCATION_ID=$(systemctl show -p InvocationID --value firewall-agent-boot.service)")).
			To(ContainSubstring("last good ruleset installed"))
		flowing(lab.ToHostAllowed)
		flowing(lab.ToNodeAllowed)
		Expect(probes.Forbidden()).To(Succeed())
	})

	It("keeps a machine whose boot step fails off the fabric, forwarding nothing, until the manager replaces it", func(ctx SpecContext) {
		before := server.Allocations()
		// The stock image without a release to download: no agent binary.
		// The create timeout outlives the emulated boot (about a minute)
		// and the checks below: with 1m, the manager at times deleted the
		// machine while they ran, and a machine shutting down showed its
		// units inactive, or active.
		Expect(framework.UpdateProviderConfig(ctx, cSeed, ex, providerConfig(stockImage, `,"createTimeout":"3m"`))).To(Succeed())
		var failing *lab.Machine
		Eventually(func(g Gomega) {
			// The first machine of the stock image, checked while it lives.
			for _, fw := range firewalls(ctx) {
				if failing == nil && fw.Spec.Image == stockImage && fw.Status.MachineStatus != nil {
					failing = hw.Machine(fw.Status.MachineStatus.MachineID)
				}
			}
			g.Expect(failing).NotTo(BeNil())
			g.Expect(failing.WaitBooted(ctx)).To(Equal("degraded"))
		}).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		// What the machine did with its userdata, for a failure: which units
		// failed, whether the boot step and the drop-ins were there, who
		// started a unit, and ignition's log.
		explain := func(unit string) func() string {
			return func() string {
				out, _ := failing.Exec(ctx, "systemctl --failed --no-pager; systemctl status --no-pager firewall-agent-boot.service "+unit+
					"; systemctl show -p Requires,After,DropInPaths "+unit+
					"; journalctl --no-pager -o short-iso -b -u "+unit+" -u firewall-agent-boot.service | tail -40")
				ign, _ := failing.IgnitionLog(ctx)
				return "no BGP, no interfaces without the boot step: " + unit + " on " + failing.Name + ":\n" + out + "\nignition's log:\n" + ign
			}
		}
		Expect(exec(ctx, failing, "systemctl is-failed firewall-agent-boot.service || true")).To(Equal("failed"), explain("firewall-agent-boot.service"))
		for _, unit := range []string{"frr.service", "systemd-networkd.service"} {
			Expect(exec(ctx, failing, "systemctl is-active "+unit+" || true")).To(Equal("inactive"), explain(unit))
		}
		Expect(l.Run(ctx, "vtysh -c 'show bgp neighbors "+failing.Port()+"' | grep 'BGP state'")).NotTo(ContainSubstring("Established"))
		flowing(lab.ToHostAllowed) // through the firewall that works
		Eventually(server.Allocations).WithTimeout(5*time.Minute).WithPolling(2*time.Second).Should(BeNumerically(">=", before+2),
			"the manager replaced the machine that never became Ready")

		By("rolling back to the image with the agent: the firewall that works stays, the failed ones go")
		Expect(framework.UpdateProviderConfig(ctx, cSeed, ex, providerConfig(recipeImage, ""))).To(Succeed())
		Eventually(func() []firewallv1alpha1.Firewall { return firewalls(ctx) }).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).
			Should(ConsistOf(HaveField("Spec.Image", recipeImage)))
		Eventually(server.Allocated).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(HaveLen(1))
		flowing(lab.ToHostAllowed)
		Expect(probes.Forbidden()).To(Succeed())
	})

	It("installs the agent onto the stock image through the userdata, checking its SHA-512 and the operator's signature", func(ctx SpecContext) {
		// Recreate: after the distance changes of a rolling update with two
		// firewalls, the lab's leaf (Debian's FRR 8.4) at times drops the
		// router MACs of both (no traffic to them until their BGP session is
		// reset; docs/development/benchmarks.md). The rolling update is
		// measured by the LAB_DISTANCE specs; this one is about the install.
		Expect(framework.UpdateProviderConfig(ctx, cSeed, ex, providerConfig(stockImage, env.stockRelease()+`,"strategy":"Recreate"`))).To(Succeed())
		var fw *firewallv1alpha1.Firewall
		Eventually(func(g Gomega) {
			fw = readyOn(ctx, stockImage)(g)
			g.Expect(fw).NotTo(BeNil())
			g.Expect(fw.Spec.AgentSHA512).To(Equal(release.sha512))
		}).WithTimeout(10*time.Minute).WithPolling(2*time.Second).Should(Succeed(), func() string {
			return "no Ready firewall of the stock image:\n" + env.describeRoll(ctx)
		})
		m := machineOf(fw)
		Expect(exec(ctx, m, "/usr/local/bin/firewall-agent --version")).To(Equal("firewall-agent " + agentVersion))
		Expect(exec(ctx, m, "journalctl --no-pager -u firewall-agent-install.service")).To(ContainSubstring("Signature Verified Successfully"))
		Expect(exec(ctx, m, "ls "+agentconfigv1alpha1.ReleaseDir+" 2>&1 || true")).To(ContainSubstring("No such file"))
		Expect(firewalls(ctx)).To(HaveLen(1), func() string { return "the old firewall went first:\n" + env.describeRoll(ctx) })
		GinkgoWriter.Printf("the roll onto the stock image: %s", env.describeRoll(ctx))
		flowing(lab.ToHostAllowed)
		Expect(probes.Forbidden()).To(Succeed())
	})

	// The distance: a rolling update and failures of the serving firewall,
	// measured with the streams (distance_test.go).
	distanceSpecs(env)
	failureSpecs(env)

	It("keeps a machine whose agent config is corrupt off the fabric", func(ctx SpecContext) {
		cfg := []byte("sources: {static: {firewall: {internalPrefixes: [10.10.0.0/16]}}\ncontrollers: {firewall: {source: static}}\nunknownField: true\n")
		userdata, err := metal.Userdata([]machine.File{{Path: agentconfigv1alpha1.ConfigPath, Content: cfg, Mode: 0o600}}, metal.Setup{DefaultRouteVRF: fmt.Sprintf("vrf%d", metalapi.InternetVRF)})
		Expect(err).NotTo(HaveOccurred())
		alloc := &metalimage.Allocation{Hostname: "fw-corrupt", Project: project, ASN: 4200003099, UserData: base64.StdEncoding.EncodeToString(userdata),
			Networks: []metalimage.Network{
				{ID: metalapi.PrivateNetwork(project), VRF: metalapi.PrivateVRF(0), Private: true, Prefixes: []string{"10.10.0.0/16"}, IPs: []string{"10.10.0.99"}},
				{ID: metalapi.Internet, VRF: metalapi.InternetVRF, NAT: true, Prefixes: []string{"100.64.0.0/16"}, IPs: []string{"100.64.0.99"}, DestinationPrefixes: []string{"0.0.0.0/0"}},
				{ID: metalapi.Underlay, Underlay: true, Prefixes: []string{"10.255.0.0/24"}, IPs: []string{"10.255.0.99"}},
			}}
		in, err := metalimage.Install(alloc)
		Expect(err).NotTo(HaveOccurred())
		m, err := l.Install(ctx, "fw-corrupt", lab.Image{Files: map[string]lab.File{agentconfigv1alpha1.BinaryPath: {Source: agentBinary, Mode: 0o755}}}, in)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) { Expect(m.Delete(ctx)).To(Succeed()) })
		Expect(m.Boot(ctx)).To(Succeed())
		Expect(m.WaitBooted(ctx)).To(Equal("degraded"))
		Expect(exec(ctx, m, "journalctl --no-pager -u firewall-agent-boot.service")).To(ContainSubstring("the agent could not run"))
		Expect(exec(ctx, m, "systemctl is-active frr.service || true")).To(Equal("inactive"))
		Expect(exec(ctx, m, "nft list chain inet firewall-agent forward-closed")).To(ContainSubstring("policy drop"), "what the image loaded stays closed")
		Expect(probes.Forbidden()).To(Succeed())
	})

	// A running shoot switched over from provider-metal's firewall
	// (switchover_test.go); it leaves the shoot with a firewall of its own.
	switchOverSpecs(env)

	It("frees the machine when the Extension is deleted", func(ctx SpecContext) {
		Expect(cSeed.Delete(ctx, ex)).To(Succeed())
		Eventually(server.Allocated).WithTimeout(3 * time.Minute).Should(BeEmpty())
	})
})
