package firewall_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/local"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seal"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

func seedFirewalls(ctx context.Context, c client.Client, namespace string) []firewallv1alpha1.Firewall {
	GinkgoHelper()
	fws, err := framework.Firewalls(ctx, c, namespace)
	Expect(err).NotTo(HaveOccurred())
	return fws
}

func bootServiceAccounts(ctx context.Context, c client.Client, namespace string) []corev1.ServiceAccount {
	GinkgoHelper()
	sas, err := framework.BootServiceAccounts(ctx, c, namespace)
	Expect(err).NotTo(HaveOccurred())
	return sas
}

// harvest collects, as the shoot's admin would, every value of every Secret
// in the shoot's firewall namespace until stopped.
func harvest(ctx context.Context, shoot client.Client) (stop func() map[string][]byte) {
	seen := map[string][]byte{}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			list := &corev1.SecretList{}
			if err := shoot.List(ctx, list, client.InNamespace(constants.ShootNamespace)); err == nil {
				for _, s := range list.Items {
					for k, v := range s.Data {
						seen[s.Name+"/"+k] = v
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() map[string][]byte { close(done); <-stopped; return seen }
}

// tokenLifetimes are the lifetimes (exp - iat) of the JWTs in data, as a
// ServiceAccount token or one inside a kubeconfig.
func tokenLifetimes(data []byte) []time.Duration {
	var out []time.Duration
	for _, jwt := range regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`).FindAll(data, -1) {
		payload, err := base64.RawURLEncoding.DecodeString(strings.Split(string(jwt), ".")[1])
		if err != nil {
			continue
		}
		claims := struct{ Exp, Iat int64 }{}
		if json.Unmarshal(payload, &claims) == nil && claims.Exp > 0 {
			out = append(out, time.Duration(claims.Exp-claims.Iat)*time.Second)
		}
	}
	return out
}

// authenticates tells whether value, used as a bearer token or as a
// kubeconfig, authenticates at the control plane.
func authenticates(ctx context.Context, cp *testenv.ControlPlane, value []byte) bool {
	GinkgoHelper()
	cfgs := []*rest.Config{cp.WithBearerToken(strings.TrimSpace(string(value)))}
	if cfg, err := clientcmd.RESTConfigFromKubeConfig(value); err == nil {
		cfg.Host, cfg.CAData = cp.Config.Host, cp.Config.CAData
		cfgs = append(cfgs, cfg)
	}
	for _, cfg := range cfgs {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			continue
		}
		if _, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}); err == nil {
			return true
		}
	}
	return false
}

var _ = Describe("Control plane migration end to end", func() {
	It("moves a running firewall to another seed: one machine, the connection kept, the agent finds its new seed through the shoot", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()

		By("starting the shoot's control plane and two seeds whose kube-controller-managers sign certificates")
		shoot := startControlPlane(framework.StartShoot, "shoot")
		seedA := startControlPlane(framework.StartSeed, "seed-a")
		seedB := startControlPlane(framework.StartSeed, "seed-b")
		cA, err := framework.SeedClient(seedA)
		Expect(err).NotTo(HaveOccurred())
		cB, err := framework.SeedClient(seedB)
		Expect(err).NotTo(HaveOccurred())
		cShoot, err := client.New(shoot.Config, client.Options{Scheme: framework.ShootScheme})
		Expect(err).NotTo(HaveOccurred())

		By("running the extension in both seeds over one machine infrastructure")
		stateDir := filepath.Join(dir, "machines")
		machines, err := framework.NewLocalMachines("mig", local.Options{StateDir: stateDir, AgentPath: agentBinary})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(machines.DeleteNetNS)
		id, intNS, extNS := machines.ID, machines.InternalNetNS, machines.ExternalNetNS
		provider := &framework.CountingProvider{Provider: machines.Provider}
		stopA := startExtension(seedA, shoot, provider)
		DeferCleanup(func() { stopA() })
		stopB := startExtension(seedB, shoot, provider)
		DeferCleanup(func() { stopB() })

		By("enabling the firewall for the shoot in seed A")
		namespace := "shoot--mig--" + id
		prepareShootNamespace(ctx, cA, namespace, shoot)
		providerConfig := `{"size":"local","image":"local","partition":"local","project":"e2e","networks":["internet"],"internalPrefixes":["10.250.0.0/24"]}`
		ex, err := framework.Reconcile(ctx, cA, namespace, "firewall", []byte(providerConfig))
		Expect(err).NotTo(HaveOccurred())

		By("wiring the machine's networks: the shoot's nodes inside, a server outside")
		rec := waitForMachine(ctx, stateDir)
		DeferCleanup(func() {
			if CurrentSpecReport().Failed() {
				GinkgoWriter.Print(framework.AgentLogs(stateDir))
			}
		})
		wiring := framework.DefaultWiring(intNS, extNS)
		Expect(wiring.Wire(rec)).To(Succeed())
		serverAddr := net.JoinHostPort(wiring.Outside, "7000")
		server, err := framework.StartEchoServer(extNS, serverAddr)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = server.Close() })

		otherAddr := net.JoinHostPort(wiring.Outside, "7001")
		other, err := framework.StartEchoServer(extNS, otherAddr)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = other.Close() })

		By("letting the machine reach both seeds and the shoot as a firewall reaches their endpoints")
		fwdCtx, stopForward := context.WithCancel(context.Background())
		DeferCleanup(stopForward)
		for _, cp := range []*testenv.ControlPlane{seedA, seedB, shoot} {
			Expect(roottest.ForwardLoopback(fwdCtx, &netns.NS{Name: rec.NetNS}, portOf(cp.Config.Host))).To(Succeed())
		}

		connectedIn := func(c client.Client) func(Gomega) {
			return func(g Gomega) {
				fws := seedFirewalls(ctx, c, namespace)
				g.Expect(fws).To(HaveLen(1))
				g.Expect(meta.IsStatusConditionTrue(fws[0].Status.Conditions, firewallv1alpha1.ConditionSeedConnected)).To(BeTrue(), "%v", fws[0].Status.Conditions)
				g.Expect(meta.IsStatusConditionTrue(fws[0].Status.Conditions, firewallv1alpha1.ConditionReady)).To(BeTrue())
			}
		}
		newConnectionDropped := func() {
			GinkgoHelper()
			c, err := framework.DialFrom(intNS, otherAddr, time.Second)
			if err == nil {
				_ = c.Close()
			}
			Expect(err).To(HaveOccurred(), "a new connection that no policy allows is dropped")
		}

		By("the agent bootstraps at seed A, enforces its rules and turns Ready")
		Eventually(connectedIn(cA)).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		fwA := seedFirewalls(ctx, cA, namespace)[0]
		fwName := fwA.Name
		deliveryKey := fwA.Annotations[firewallv1alpha1.AnnotationDeliveryKey]
		Expect(deliveryKey).NotTo(BeEmpty(), "seed A names the Firewall's delivery key")
		Eventually(func() (string, error) {
			data, err := os.ReadFile(filepath.Join(framework.MachineRoot(stateDir, rec), agentconfigv1alpha1.DeliveryStatePath))
			return string(data), err
		}).Should(ContainSubstring(deliveryKey), "the agent pinned it from its seed")
		Eventually(func() (string, error) {
			out, err := exec.Command("ip", "netns", "exec", rec.NetNS, "nft", "list", "table", "inet", "firewall-agent").CombinedOutput()
			return string(out), err
		}).Should(ContainSubstring("10.250.0.0/24"))
		newConnectionDropped()

		By("the shoot owner allows the connection with a ClusterwideNetworkPolicy, which the agent enforces and reports")
		// The shoot's resource manager applies the extension's shoot
		// ManagedResource (CRDs, namespace, the agent's RBAC) first.
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
		// A booting firewall forwards nothing until its agent applied its rules
		// (firewall-agent boot): the connection opens once the policy allows it.
		By("opening a connection through the machine, which the policy allows")
		conn, err := framework.DialFrom(intNS, serverAddr, 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = conn.Close() })
		kept := framework.NewEchoConn(conn)
		echo := func(msg string) {
			GinkgoHelper()
			Expect(kept.Echo(msg)).To(Succeed(), "the connection opened before must carry %q", msg)
		}
		echo("while seed A manages the firewall: the policy allows it")
		Eventually(func(g Gomega) {
			fws := seedFirewalls(ctx, cA, namespace)
			g.Expect(fws).To(HaveLen(1))
			g.Expect(meta.IsStatusConditionTrue(fws[0].Status.Conditions, firewallv1alpha1.ConditionConnected)).To(BeTrue(),
				"the agent reports what it read from the shoot into the seed: %v", fws[0].Status.Conditions)
		}).WithTimeout(time.Minute).Should(Succeed())
		newConn, err := framework.DialFrom(intNS, serverAddr, 5*time.Second)
		Expect(err).NotTo(HaveOccurred(), "a new connection the policy allows")
		_ = newConn.Close()
		newConnectionDropped()

		By("the agent keeps a shoot kubeconfig with a TokenRequestor token, readable by root only")
		shootKubeconfig := filepath.Join(framework.MachineRoot(stateDir, rec), agentconfigv1alpha1.ShootKubeconfigPath)
		Eventually(func() (string, error) {
			data, err := os.ReadFile(shootKubeconfig)
			return string(data), err
		}).WithTimeout(time.Minute).Should(And(ContainSubstring("token: "), ContainSubstring(shoot.Config.Host)))
		info, err := os.Stat(shootKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))

		By("no credential outlives an hour but the agent's own certificate, and nothing the shoot's admin reads authenticates at a seed")
		var seedSecrets corev1.SecretList
		Expect(cA.List(ctx, &seedSecrets)).To(Succeed())
		for _, secret := range seedSecrets.Items {
			for key, value := range secret.Data {
				for _, life := range tokenLifetimes(value) {
					Expect(life).To(BeNumerically("<=", time.Hour), "seed A %s/%s[%s]", secret.Namespace, secret.Name, key)
				}
			}
		}
		for _, file := range []string{agentconfigv1alpha1.BootstrapKubeconfigPath, agentconfigv1alpha1.ShootKubeconfigPath} {
			data, err := os.ReadFile(filepath.Join(framework.MachineRoot(stateDir, rec), file))
			Expect(err).NotTo(HaveOccurred())
			lives := tokenLifetimes(data)
			Expect(lives).NotTo(BeEmpty(), file)
			for _, life := range lives {
				Expect(life).To(BeNumerically("<=", time.Hour), file)
			}
		}
		var shootSecrets corev1.SecretList
		Expect(cShoot.List(ctx, &shootSecrets)).To(Succeed())
		for _, secret := range shootSecrets.Items {
			for key, value := range secret.Data {
				Expect(authenticates(ctx, seedA, value)).To(BeFalse(), "shoot %s/%s[%s] authenticates at seed A", secret.Namespace, secret.Name, key)
			}
		}

		By("migrating away from seed A")
		// Migrate Succeeded, then gardenlet deletes the Extension shallowly.
		state, err := framework.Migrate(ctx, cA, ex, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(seedFirewalls(ctx, cA, namespace)).To(BeEmpty())
		Expect(bootServiceAccounts(ctx, cA, namespace)).To(BeEmpty(), "seed A's boot tokens are revoked")
		Expect(cA.Get(ctx, client.ObjectKey{Name: firewallv1alpha1.AgentUserName(namespace, fwName)}, &rbacv1.ClusterRoleBinding{})).To(Satisfy(apierrors.IsNotFound),
			"seed A grants the agent nothing any more")
		echo("between migrate and restore: the machine forwards with its last rules")
		newConnectionDropped()

		By("the shoot's admin delivers a bootstrap kubeconfig of their own, sealed to the agent's public key: the agent refuses it and keeps its files")
		bootstrapOnMachine := filepath.Join(framework.MachineRoot(stateDir, rec), agentconfigv1alpha1.BootstrapKubeconfigPath)
		bootstrapBefore, err := os.ReadFile(bootstrapOnMachine)
		Expect(err).NotTo(HaveOccurred())
		forgeDelivery(ctx, cShoot, namespace, fwName, fwA.Annotations[firewallv1alpha1.AnnotationAgentKey])
		Eventually(func() string { return framework.AgentLogs(stateDir) }).WithTimeout(time.Minute).
			Should(ContainSubstring("refused the bootstrap kubeconfig delivered through the shoot; nothing changed"))
		Expect(os.ReadFile(bootstrapOnMachine)).To(Equal(bootstrapBefore))
		echo("after the forged delivery")

		By("restoring in seed B as gardenlet does: wait-for-state, the state, then restore; the shoot's admin reads every Secret of the firewall namespace meanwhile")
		stopHarvest := harvest(ctx, cShoot)
		prepareShootNamespace(ctx, cB, namespace, shoot)
		// The restore is reported done only once the agent has reached seed B
		// and reports its rules in force there.
		restoring := time.Now()
		exB, err := framework.Restore(ctx, cB, ex, state, 3*time.Minute)
		Expect(err).NotTo(HaveOccurred())

		By("the extension in seed B dies and starts again")
		stopB()
		stopB = startExtension(seedB, shoot, provider)

		fwRestored := seedFirewalls(ctx, cB, namespace)
		Expect(fwRestored).To(HaveLen(1))
		Expect(meta.IsStatusConditionTrue(fwRestored[0].Status.Conditions, firewallv1alpha1.ConditionReady)).To(BeTrue(), "Restore Succeeded only once the firewall is Ready in seed B")
		Expect(fwRestored[0].Status.AgentStatus.AppliedGeneration).To(Equal(fwRestored[0].Generation), "and its agent has seed B's Firewall spec in force")

		By("the agent takes its new bootstrap kubeconfig from the shoot and connects to seed B")
		// The time it takes is a figure (printed), not an assertion: CI runs
		// the suites in parallel on two cores.
		Eventually(connectedIn(cB)).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		GinkgoWriter.Printf("agent connected to seed B %.1f s after the restore began\n", time.Since(restoring).Seconds())
		fwB := seedFirewalls(ctx, cB, namespace)[0]
		Expect(fwB.Name).To(Equal(fwName))
		Expect(fwB.Status.MachineStatus.MachineID).To(Equal(rec.ID), "the same machine, found by its ID")
		Expect(fwB.Status.AgentStatus.LastRunAgainstSeed.Time).To(BeTemporally(">", restoring.Add(-time.Second)), "a report into seed B (the time has seconds only)")
		Expect(provider.Created()).To(Equal(int32(1)), "never a second machine")

		By("what the shoot's admin read in the shoot authenticates at no seed")
		harvested := stopHarvest()
		delivered := firewallv1alpha1.DeliveredBootstrapSecretName(fwName) + "/" + firewallv1alpha1.DeliveredBootstrapKey
		Expect(harvested).To(HaveKey(delivered), "the admin saw the delivered bootstrap kubeconfig: the harness can catch a leak")
		Expect(fwB.Annotations[firewallv1alpha1.AnnotationDeliveryKey]).To(Equal(deliveryKey), "the delivery key travelled in the state")
		deliveryPub, err := base64.StdEncoding.DecodeString(deliveryKey)
		Expect(err).NotTo(HaveOccurred())
		d, err := seal.Verify(deliveryPub, namespace, fwName, harvested[delivered])
		Expect(err).NotTo(HaveOccurred(), "seed B signed it with the key the agent pinned from seed A")
		envelope := seal.Envelope{}
		Expect(json.Unmarshal(d.Sealed, &envelope)).To(Succeed())
		Expect(envelope.Version).To(Equal(seal.Version), "sealed to the machine's key")
		for name, value := range harvested {
			for _, cp := range []*testenv.ControlPlane{seedA, seedB} {
				Expect(authenticates(ctx, cp, value)).To(BeFalse(), "%s authenticates at %s", name, cp.Name)
			}
		}

		By("the delivered kubeconfig is withdrawn from the shoot and the new token revoked")
		Eventually(func() bool {
			return apierrors.IsNotFound(cShoot.Get(ctx, client.ObjectKey{Namespace: constants.ShootNamespace, Name: firewallv1alpha1.DeliveredBootstrapSecretName(fwName)}, &corev1.Secret{}))
		}).Should(BeTrue())
		Eventually(func() []corev1.ServiceAccount { return bootServiceAccounts(ctx, cB, namespace) }).Should(BeEmpty())

		By("the connection opened before the migration still carries data; new ones are still dropped")
		echo("after the migration")
		newConnectionDropped()
		Consistently(provider.Created).WithTimeout(3 * time.Second).Should(Equal(int32(1)))

		By("deleting the Extension in seed B releases the one machine")
		Expect(cB.Delete(ctx, exB)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(cB.Get(ctx, client.ObjectKeyFromObject(exB), exB)) }).WithTimeout(2 * time.Minute).Should(BeTrue())
		Expect(filepath.Join("/var/run/netns", rec.NetNS)).NotTo(BeAnExistingFile())
	})
})

// forgeDelivery writes, as the shoot's admin can, a delivered bootstrap
// kubeconfig for the firewall that points at a server of their own, sealed to
// the agent's public key (no secret: it is on the Firewall and in every CSR)
// and signed with a key of their own, and lets the agent read it.
func forgeDelivery(ctx context.Context, shoot client.Client, namespace, fwName, agentKey string) {
	GinkgoHelper()
	pub, err := base64.StdEncoding.DecodeString(agentKey)
	Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := credentials.BootstrapKubeconfig("https://127.0.0.1:9", []byte("attacker-ca"), "attacker-token")
	Expect(err).NotTo(HaveOccurred())
	sealed, err := seal.Seal(pub, namespace, fwName, kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	attacker, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	box, err := seal.Sign(attacker, seal.Delivery{Firewall: namespace + "/" + fwName, Generation: math.MaxInt64, Expires: time.Now().Add(10 * 365 * 24 * time.Hour), Sealed: sealed})
	Expect(err).NotTo(HaveOccurred())
	name := firewallv1alpha1.DeliveredBootstrapSecretName(fwName)
	meta := metav1.ObjectMeta{Name: name, Namespace: constants.ShootNamespace}
	Expect(client.IgnoreAlreadyExists(shoot.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: constants.ShootNamespace}}))).To(Succeed())
	Expect(shoot.Create(ctx, &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{firewallv1alpha1.DeliveredBootstrapKey: box}})).To(Succeed())
	Expect(shoot.Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{name}, Verbs: []string{"get"}}}})).To(Succeed())
	Expect(shoot.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: constants.AgentServiceAccountName, Namespace: metav1.NamespaceSystem}}})).To(Succeed())
}
