package firewall_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/local"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// succeeded is the last operation of an Extension that is done.
var succeeded = regexp.MustCompile(`^(Create|Reconcile) Succeeded$`)

// ip runs ip(8) with args.
func ip(args ...string) {
	GinkgoHelper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "ip %s: %s", strings.Join(args, " "), out)
}

// rollingWiring wires machine number n (1, 2, ...) of the local provider
// into the shoot's nodes namespace and the outside namespace on networks of
// its own (10.250.n.0/24 inside, 203.0.(112+n).0/24 outside), while the
// node's address 10.250.0.2 and the server's 203.0.113.2 sit on the loopback
// there: they outlive any one machine's links, as a node and a server outlive
// a firewall. Routes through the machine are set by routeVia.
func rollingWiring(intNS, extNS string, rec framework.MachineRecord, n int) {
	GinkgoHelper()
	short := strings.TrimPrefix(rec.ID, "local-")
	machineInt, nodeSide := fmt.Sprintf("10.250.%d.1", n), fmt.Sprintf("10.250.%d.2", n)
	machineExt, outSide := fmt.Sprintf("203.0.%d.1", 112+n), fmt.Sprintf("203.0.%d.2", 112+n)
	ip("-n", rec.NetNS, "addr", "add", machineInt+"/24", "dev", "int0")
	ip("-n", rec.NetNS, "addr", "add", machineExt+"/24", "dev", "ext0")
	ip("-n", rec.NetNS, "route", "add", "10.250.0.2/32", "via", nodeSide, "dev", "int0")
	ip("-n", rec.NetNS, "route", "add", "203.0.113.2/32", "via", outSide, "dev", "ext0")
	ip("-n", intNS, "addr", "add", nodeSide+"/24", "dev", "fw"+short+"i")
	ip("-n", extNS, "addr", "add", outSide+"/24", "dev", "fw"+short+"e")
}

// routeVia sends the node's traffic to the server, and the replies, through
// machine number n: what BGP does on metal-stack when the preferred firewall
// changes.
func routeVia(intNS, extNS string, n int) {
	GinkgoHelper()
	ip("-n", intNS, "route", "replace", "203.0.113.2/32", "via", fmt.Sprintf("10.250.%d.1", n), "src", "10.250.0.2")
	ip("-n", extNS, "route", "replace", "10.250.0.2/32", "via", fmt.Sprintf("203.0.%d.1", 112+n), "src", "203.0.113.2")
}

var _ = Describe("Rolling replacement end to end", func() {
	It("replaces a running firewall with a new one while a TCP connection runs through it, never without a forwarding firewall", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		shoot := startControlPlane(framework.StartShoot, "shoot")
		seed := startControlPlane(framework.StartSeed, "seed")
		c, err := framework.SeedClient(seed)
		Expect(err).NotTo(HaveOccurred())
		cShoot, err := client.New(shoot.Config, client.Options{Scheme: framework.ShootScheme})
		Expect(err).NotTo(HaveOccurred())

		stateDir := filepath.Join(dir, "machines")
		machines, err := framework.NewLocalMachines("roll", local.Options{StateDir: stateDir, AgentPath: agentBinary})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(machines.DeleteNetNS)
		id, intNS, extNS := machines.ID, machines.InternalNetNS, machines.ExternalNetNS
		provider := &framework.CountingProvider{Provider: machines.Provider}
		stop := startExtension(seed, shoot, provider)
		DeferCleanup(func() { stop() })

		By("a shoot with a firewall, a node inside and a server outside")
		namespace := "shoot--roll--" + id
		prepareShootNamespace(ctx, c, namespace, shoot)
		providerConfig := `{"size":"local","image":"local","partition":"local","project":"e2e","networks":["internet"],"internalPrefixes":["10.250.0.0/16"]}`
		ex, err := framework.Reconcile(ctx, c, namespace, "firewall", []byte(providerConfig))
		Expect(err).NotTo(HaveOccurred())
		first := waitForMachine(ctx, stateDir)
		for _, link := range []struct{ ns, addr string }{{intNS, "10.250.0.2/32"}, {extNS, "203.0.113.2/32"}} {
			ip("-n", link.ns, "link", "set", "lo", "up")
			ip("-n", link.ns, "addr", "add", link.addr, "dev", "lo")
		}
		rollingWiring(intNS, extNS, first, 1)
		routeVia(intNS, extNS, 1)
		serverAddr := net.JoinHostPort("203.0.113.2", "7000")
		server, err := framework.StartEchoServer(extNS, serverAddr)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = server.Close() })

		fwdCtx, stopForward := context.WithCancel(context.Background())
		DeferCleanup(stopForward)
		reachControlPlanes := func(rec framework.MachineRecord) {
			for _, cp := range []*testenv.ControlPlane{seed, shoot} {
				Expect(roottest.ForwardLoopback(fwdCtx, &netns.NS{Name: rec.NetNS}, portOf(cp.Config.Host))).To(Succeed())
			}
		}
		reachControlPlanes(first)
		DeferCleanup(func() {
			if CurrentSpecReport().Failed() {
				GinkgoWriter.Print(framework.AgentLogs(stateDir))
			}
		})
		readyFirewalls := func() []string {
			var ready []string
			for _, fw := range seedFirewalls(ctx, c, namespace) {
				if fw.DeletionTimestamp == nil && meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionReady) {
					ready = append(ready, fw.Name)
				}
			}
			return ready
		}
		Eventually(readyFirewalls).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(HaveLen(1))
		Expect(framework.WaitForLastOperation(ctx, c, ex, succeeded, 2*time.Minute)).To(Succeed())
		oldName := readyFirewalls()[0]

		By("the shoot owner allows the server; a connection opens through the first firewall")
		policy := &firewallv1alpha1.ClusterwideNetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "allow-echo", Namespace: firewallv1alpha1.ClusterwideNetworkPolicyNamespace},
			Spec: firewallv1alpha1.PolicySpec{Egress: []firewallv1alpha1.EgressRule{{
				To: []firewallv1alpha1.IPBlock{{CIDR: "203.0.113.2/32"}}, Ports: []firewallv1alpha1.PolicyPort{{Port: ptr.To[int32](7000)}},
			}}},
		}
		Eventually(func() error { return cShoot.Create(ctx, policy) }).WithTimeout(time.Minute).Should(Succeed())
		var conn net.Conn
		Eventually(func() error {
			conn, err = framework.DialFrom(intNS, serverAddr, time.Second)
			return err
		}).WithTimeout(2*time.Minute).Should(Succeed(), "the agent enforces the policy")
		DeferCleanup(func() { _ = conn.Close() })
		kept := framework.NewEchoConn(conn)
		Expect(kept.Echo("through the first firewall")).To(Succeed())

		// The connection carries a line every 100 ms through the whole roll.
		var mu sync.Mutex
		var echoes int
		var echoErr error
		echoCtx, stopEchoes := context.WithCancel(ctx)
		echoed := make(chan struct{})
		go func() {
			defer close(echoed)
			for i := 0; echoCtx.Err() == nil; i++ {
				err := kept.Echo(fmt.Sprintf("line %d", i))
				mu.Lock()
				if err != nil {
					echoErr = err
					mu.Unlock()
					return
				}
				echoes++
				mu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
		}()
		echoFailure := func() error {
			mu.Lock()
			defer mu.Unlock()
			return echoErr
		}

		By("an image update rolls the firewall: a second machine comes up beside the first")
		Expect(framework.UpdateProviderConfig(ctx, c, ex, []byte(strings.Replace(providerConfig, `"image":"local"`, `"image":"local-v2"`, 1)))).To(Succeed())
		var second framework.MachineRecord
		Eventually(func(g Gomega) {
			recs, err := framework.Machines(stateDir)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(recs).To(HaveLen(2))
			for _, rec := range recs {
				if rec.ID != first.ID {
					second = rec
				}
			}
		}).WithTimeout(time.Minute).Should(Succeed())
		rollingWiring(intNS, extNS, second, 2)
		reachControlPlanes(second)
		Expect(provider.Created()).To(BeNumerically("==", 2), "one new machine, not more")

		By("the first firewall forwards until the second is Ready")
		Eventually(func(g Gomega) {
			g.Expect(echoFailure()).NotTo(HaveOccurred())
			ready := readyFirewalls()
			g.Expect(ready).To(ContainElement(Not(Equal(oldName))))
		}).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("the routes move to the second firewall, as BGP moves them on metal-stack")
		routeVia(intNS, extNS, 2)
		Eventually(func(g Gomega) {
			g.Expect(echoFailure()).NotTo(HaveOccurred())
			g.Expect(framework.Machines(stateDir)).To(HaveLen(1), "the first machine is released once the second is Ready")
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		mu.Lock()
		before := echoes
		mu.Unlock()
		Eventually(func() int { mu.Lock(); defer mu.Unlock(); return echoes }).Should(BeNumerically(">", before+10),
			"the connection opened through the first firewall still carries data through the second")
		stopEchoes()
		<-echoed
		Expect(echoFailure()).NotTo(HaveOccurred())
		Expect(framework.WaitForLastOperation(ctx, c, ex, succeeded, 2*time.Minute)).To(Succeed())
		Expect(provider.Created()).To(BeNumerically("==", 2))
	})
})
