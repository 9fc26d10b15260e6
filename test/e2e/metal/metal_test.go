package metal_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/local"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/metal"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalclient"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

const project = "p1"

// The extension with --machine-provider metal against the in-process
// metal-api, whose hardware boots each allocated firewall as a network
// namespace running the real agent.
var _ = Describe("Firewall on metal end to end", func() {
	It("allocates once although the allocation times out, enforces policies on real packets, migrates with one allocation, rolls new-machine-first, and frees", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		stateDir := filepath.Join(dir, "machines")
		machines, err := framework.NewLocalMachines("met", local.Options{StateDir: stateDir, AgentPath: agentBinary, NetNSPrefix: "met-"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(machines.DeleteNetNS)
		id, intNS, extNS := machines.ID, machines.InternalNetNS, machines.ExternalNetNS

		By("starting the shoot's control plane and two seeds")
		shoot := startControlPlane(framework.StartShoot, "shoot")
		seedA := startControlPlane(framework.StartSeed, "seed-a")
		seedB := startControlPlane(framework.StartSeed, "seed-b")
		cA, err := framework.SeedClient(seedA)
		Expect(err).NotTo(HaveOccurred())
		cB, err := framework.SeedClient(seedB)
		Expect(err).NotTo(HaveOccurred())
		cShoot, err := client.New(shoot.Config, client.Options{Scheme: framework.ShootScheme})
		Expect(err).NotTo(HaveOccurred())

		By("starting the metal-api, whose hardware boots machines as network namespaces")
		hardware := &metalapi.LocalHardware{Provider: machines.Provider}
		opts := metalapi.Inventory(project)
		opts.Hardware = hardware
		server, err := metalapi.New(opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			server.Close()
			server.ExpectNoViolations()
		})
		fwdCtx, stopForward := context.WithCancel(context.Background())
		DeferCleanup(stopForward)
		forwardIntoMachines(fwdCtx, stateDir, seedA, seedB, shoot)

		By("running the extension in both seeds with the metal provider (its own client each), the allocation answering after its 2 s timeout")
		newProvider := func() *metal.Provider {
			GinkgoHelper()
			p, err := metal.New(metal.Options{URL: server.URL, AuthType: metalclient.AuthTypeEdit, Key: metalclient.StaticKey(metalapi.EditKey), Timeout: 2 * time.Second})
			Expect(err).NotTo(HaveOccurred())
			return p
		}
		server.DelayAllocations(4 * time.Second)
		start := func(seed *testenv.ControlPlane) func() {
			GinkgoHelper()
			stop, err := framework.StartExtension(seed, shoot, framework.ExtensionOptions{Provider: newProvider(), InDoubtSettle: 30 * time.Second})
			Expect(err).NotTo(HaveOccurred())
			return func() { Expect(stop()).To(Succeed()) }
		}
		stopA := start(seedA)
		DeferCleanup(func() { stopA() })
		stopB := start(seedB)
		DeferCleanup(func() { stopB() })

		By("enabling the firewall for the shoot in seed A")
		namespace := "shoot--metal--" + id
		// The shoot's nodes are its private network's prefix, as provider-metal
		// allocates it; the providerConfig names only the internet: the
		// extension finds the node network in the metal-api.
		shootNS := framework.ShootNamespace{Name: namespace, Shoot: shoot, ShootNodes: metalapi.PrivatePrefix(0)}
		Expect(shootNS.Create(ctx, cA)).To(Succeed())
		providerConfig := func(image string) []byte {
			return fmt.Appendf(nil, `{"size":%q,"image":%q,"partition":"partition-a","project":%q,"networks":[%q],"internalPrefixes":["10.250.0.0/24"]}`,
				metalapi.Size, image, project, metalapi.Internet)
		}
		ex, err := framework.Reconcile(ctx, cA, namespace, "firewall", providerConfig(metalapi.Image))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) []string {
			d := &firewallv1alpha1.FirewallDeployment{}
			g.Expect(cA.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "firewall"}, d)).To(Succeed())
			return d.Spec.Template.Spec.Networks
		}).Should(Equal([]string{metalapi.Internet, metalapi.PrivateNetwork(project)}), "the node network found")

		By("the allocation timed out after the metal-api carried it out: the manager finds that machine and allocates no other")
		var machineID string
		Eventually(func(g Gomega) {
			fws, err := framework.Firewalls(ctx, cA, namespace)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fws).To(HaveLen(1))
			g.Expect(fws[0].Status.MachineStatus).NotTo(BeNil())
			machineID = fws[0].Status.MachineStatus.MachineID
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(server.Allocated()).To(ConsistOf(machineID))
		Eventually(server.Unanswered).Should(BeNumerically(">=", 1), "the manager gave up on the allocation's answer")
		server.DelayAllocations(0)
		Consistently(server.Allocations).WithTimeout(5 * time.Second).Should(Equal(1))

		By("wiring the machine: the shoot's nodes behind its private network's link, a server behind the internet's")
		var rec framework.MachineRecord
		Eventually(func() bool {
			var ok bool
			rec, ok = machineRecord(stateDir, hardware.LocalID(machineID))
			return ok
		}).Should(BeTrue())
		DeferCleanup(func() {
			if CurrentSpecReport().Failed() {
				GinkgoWriter.Print(framework.AgentLogs(stateDir))
			}
		})
		wiring := framework.DefaultWiring(intNS, extNS)
		wiring.InternalLink, wiring.ExternalLink = metal.InterfaceOf(metalapi.PrivateVRF(0)), metal.InterfaceOf(metalapi.InternetVRF)
		Expect(wiring.Wire(rec)).To(Succeed())
		serverAddr := net.JoinHostPort(wiring.Outside, "7000")
		echoServer, err := framework.StartEchoServer(extNS, serverAddr)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = echoServer.Close() })
		otherAddr := net.JoinHostPort(wiring.Outside, "7001")
		other, err := framework.StartEchoServer(extNS, otherAddr)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = other.Close() })

		readyIn := func(c client.Client) func(Gomega) {
			return func(g Gomega) {
				fws, err := framework.Firewalls(ctx, c, namespace)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(fws).To(HaveLen(1))
				g.Expect(meta.IsStatusConditionTrue(fws[0].Status.Conditions, firewallv1alpha1.ConditionProvisioned)).To(BeTrue(), "%v", fws[0].Status.Conditions)
				g.Expect(meta.IsStatusConditionTrue(fws[0].Status.Conditions, firewallv1alpha1.ConditionReady)).To(BeTrue(), "%v", fws[0].Status.Conditions)
			}
		}
		dropped := func(addr string) {
			GinkgoHelper()
			c, err := framework.DialFrom(intNS, addr, time.Second)
			if err == nil {
				_ = c.Close()
			}
			Expect(err).To(HaveOccurred(), "a new connection to %s that no policy allows is dropped", addr)
		}

		By("the agent bootstraps at seed A; the Firewall is Provisioned (Phoned Home) and Ready, with the metal-api's view and its egress IPs")
		Eventually(readyIn(cA)).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		fws, err := framework.Firewalls(ctx, cA, namespace)
		Expect(err).NotTo(HaveOccurred())
		fwName := fws[0].Name
		Expect(fws[0].Status.MachineStatus).To(And(HaveField("Liveliness", "Alive"), HaveField("ImageID", metalapi.Image), HaveField("LastEvent.Event", "Phoned Home")))
		Expect(fws[0].Status.EgressIPs).To(ConsistOf(HavePrefix("100.64.")), "the machine's internet address")

		By("the running firewall's heartbeats reconcile it without asking the metal-api: three beats, no request")
		requests, beats, last := server.Requests(), 0, fws[0].Status.AgentStatus.LastRunAgainstSeed.Time
		Eventually(func(g Gomega) int {
			fw := &firewallv1alpha1.Firewall{}
			g.Expect(cA.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fwName}, fw)).To(Succeed())
			if t := fw.Status.AgentStatus.LastRunAgainstSeed.Time; t.After(last) {
				beats, last = beats+1, t
			}
			return beats
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeNumerically(">=", 3))
		Expect(server.Requests()-requests).To(BeZero(), "a booted machine is read once per resync (5 minutes), not per heartbeat")
		Eventually(func() (string, error) {
			out, err := exec.Command("ip", "netns", "exec", rec.NetNS, "nft", "list", "table", "inet", "firewall-agent").CombinedOutput()
			return string(out), err
		}).Should(ContainSubstring("10.250.0.0/24"))
		dropped(serverAddr)

		By("the shoot owner allows the connection with a ClusterwideNetworkPolicy: real packets pass, others are dropped")
		policy := &firewallv1alpha1.ClusterwideNetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "allow-echo", Namespace: firewallv1alpha1.ClusterwideNetworkPolicyNamespace},
			Spec: firewallv1alpha1.PolicySpec{Egress: []firewallv1alpha1.EgressRule{{
				To: []firewallv1alpha1.IPBlock{{CIDR: wiring.Outside + "/32"}}, Ports: []firewallv1alpha1.PolicyPort{{Port: ptr.To[int32](7000)}},
			}}},
		}
		Eventually(func() error { return cShoot.Create(ctx, policy) }).WithTimeout(time.Minute).Should(Succeed())
		Eventually(func(g Gomega) firewallv1alpha1.PolicyState {
			g.Expect(cShoot.Get(ctx, client.ObjectKeyFromObject(policy), policy)).To(Succeed())
			return policy.Status.State
		}).WithTimeout(2 * time.Minute).Should(Equal(firewallv1alpha1.PolicyStateDeployed))
		conn, err := framework.DialFrom(intNS, serverAddr, 5*time.Second)
		Expect(err).NotTo(HaveOccurred(), "the policy allows it")
		kept := framework.NewEchoConn(conn)
		DeferCleanup(func() { _ = conn.Close() })
		Expect(kept.Echo("seed A manages the firewall")).To(Succeed())
		dropped(otherAddr)

		By("migrating the control plane from seed A to seed B: the same machine, no second allocation")
		state, err := framework.Migrate(ctx, cA, ex, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(kept.Echo("between migrate and restore")).To(Succeed())
		Expect(shootNS.Create(ctx, cB)).To(Succeed())
		exB, err := framework.Restore(ctx, cB, ex, state, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Eventually(readyIn(cB)).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		fwsB, err := framework.Firewalls(ctx, cB, namespace)
		Expect(err).NotTo(HaveOccurred())
		Expect(fwsB[0].Name).To(Equal(fwName))
		Expect(fwsB[0].Status.MachineStatus.MachineID).To(Equal(machineID))
		Expect(server.Allocations()).To(Equal(1), "one allocation over two seeds")
		Expect(kept.Echo("after the migration")).To(Succeed())
		dropped(otherAddr)

		By("a rolling update in seed B: the new machine is allocated and Ready before the old one is freed")
		Expect(framework.UpdateProviderConfig(ctx, cB, exB, providerConfig(metalapi.NextImage))).To(Succeed())
		var newID string
		Eventually(func(g Gomega) {
			allocated := server.Allocated()
			g.Expect(allocated).To(HaveLen(2), "both machines while the new one comes up")
			for _, a := range allocated {
				if a != machineID {
					newID = a
				}
			}
		}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		var readySince time.Time
		Eventually(func(g Gomega) {
			fws, err := framework.Firewalls(ctx, cB, namespace)
			g.Expect(err).NotTo(HaveOccurred())
			var ready *metav1.Condition
			for _, fw := range fws {
				if fw.Status.MachineStatus != nil && fw.Status.MachineStatus.MachineID == newID {
					ready = meta.FindStatusCondition(fw.Status.Conditions, firewallv1alpha1.ConditionReady)
				}
			}
			g.Expect(ready).To(HaveField("Status", metav1.ConditionTrue), "the new firewall is Ready")
			readySince = ready.LastTransitionTime.Time
			g.Expect(server.Allocated()).To(ConsistOf(newID), "then the old machine is freed")
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		freed, _ := server.FreedAt(machineID)
		Expect(readySince).NotTo(BeTemporally(">", freed), "the old machine was freed only after the new firewall was Ready (to the second)")
		Expect(server.Firewall(newID).Allocation.Image.ID).To(HaveValue(Equal(metalapi.NextImage)))
		Expect(server.Allocations()).To(Equal(2))
		// Freed in the metal-api first; the machine's teardown follows.
		Eventually(filepath.Join("/var/run/netns", rec.NetNS)).WithTimeout(time.Minute).ShouldNot(BeAnExistingFile(), "the old machine is halted")

		By("deleting the Extension frees the machine")
		Expect(cB.Delete(ctx, exB)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(cB.Get(ctx, client.ObjectKeyFromObject(exB), exB)) }).WithTimeout(2 * time.Minute).Should(BeTrue())
		Expect(server.Allocated()).To(BeEmpty())
		Expect(server.Allocations()).To(Equal(2))
	})
})
