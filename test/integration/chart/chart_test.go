package chart_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	istioapinetworkingv1alpha3 "istio.io/api/networking/v1alpha3"
	istioapinetworkingv1beta1 "istio.io/api/networking/v1beta1"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	istionetworkingv1beta1 "istio.io/client-go/pkg/apis/networking/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/cmd/gardener-extension-firewall/app"
	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seal"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/envoyfilter"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/providerfirewall"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

var gatewayLabels = map[string]string{"app": "istio-ingressgateway", "istio": "ingressgateway"}

// createShoot creates what gardenlet keeps for a shoot in the seed: namespace, Cluster,
// Infrastructure with egress CIDRs, the `gardener` kubeconfig Secret (the seed stands in for
// the shoot) and the kube-apiserver Gateway.
func createShoot(ctx SpecContext, namespace string) {
	Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleShoot}}})).To(Succeed())
	Expect(admin.Create(ctx, &extensionsv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: namespace},
		Spec: extensionsv1alpha1.ClusterSpec{
			CloudProfile: runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"CloudProfile","metadata":{"name":"local"}}`)},
			Seed:         &runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Seed","metadata":{"name":"seed"},"spec":{"networks":{"nodes":"10.1.0.0/16","pods":"10.2.0.0/16","services":"10.3.0.0/16"}}}`)},
			Shoot:        runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot","metadata":{"name":"s","namespace":"garden-p"},"spec":{"networking":{"nodes":"10.250.0.0/16"}}}`)},
		},
	})).To(Succeed())
	infra := &extensionsv1alpha1.Infrastructure{
		ObjectMeta: metav1.ObjectMeta{Name: "infra", Namespace: namespace},
		Spec: extensionsv1alpha1.InfrastructureSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "local"}, Region: "local",
			SecretRef: corev1.SecretReference{Name: "cloudprovider", Namespace: namespace},
		},
	}
	Expect(admin.Create(ctx, infra)).To(Succeed())
	infra.Status.EgressCIDRs = []string{"198.51.100.0/30"}
	Expect(admin.Status().Update(ctx, infra)).To(Succeed())
	gardenerSecret, err := testenv.GardenerSecret(namespace, cp.Config)
	Expect(err).NotTo(HaveOccurred())
	Expect(admin.Create(ctx, gardenerSecret)).To(Succeed())

	gw := &istionetworkingv1beta1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver", Namespace: namespace}}
	gw.Spec.Selector = gatewayLabels
	gw.Spec.Servers = []*istioapinetworkingv1beta1.Server{{
		Port:  &istioapinetworkingv1beta1.Port{Number: 443, Name: "tls", Protocol: "TLS"},
		Hosts: []string{"api." + namespace + ".example.com"},
		Tls:   &istioapinetworkingv1beta1.ServerTLSSettings{Mode: istioapinetworkingv1beta1.ServerTLSSettings_PASSTHROUGH},
	}}
	Expect(admin.Create(ctx, gw)).To(Succeed())
}

// ensureIngress creates the seed's Istio ingress namespace and gateway Service, once for the
// specs that need them, and returns the namespace.
func ensureIngress(ctx SpecContext) string {
	ingress := constants.DefaultIngressNamespace
	Expect(client.IgnoreAlreadyExists(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ingress, Labels: map[string]string{constants.IngressNamespaceLabel: constants.IngressNamespaceRole}}}))).To(Succeed())
	Expect(client.IgnoreAlreadyExists(admin.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: ingress, Labels: gatewayLabels},
		Spec:       corev1.ServiceSpec{Selector: gatewayLabels, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}))).To(Succeed())
	return ingress
}

func newExtension(namespace, extensionType, providerConfig string) *extensionsv1alpha1.Extension {
	return &extensionsv1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: extensionType, Namespace: namespace, Annotations: map[string]string{
			v1beta1constants.GardenerOperation: v1beta1constants.GardenerOperationReconcile,
		}},
		Spec: extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{
			Type: extensionType, ProviderConfig: &runtime.RawExtension{Raw: []byte(providerConfig)},
		}},
	}
}

// lastOperation is "<type> <state>" of the Extension's last operation, with its error.
func lastOperation(ctx SpecContext, ex *extensionsv1alpha1.Extension) func() string {
	return func() string {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil {
			return err.Error()
		}
		op := ex.Status.LastOperation
		if op == nil {
			return ""
		}
		if ex.Status.LastError != nil {
			return fmt.Sprintf("%s %s: %s", op.Type, op.State, ex.Status.LastError.Description)
		}
		return fmt.Sprintf("%s %s", op.Type, op.State)
	}
}

func annotate(ctx SpecContext, ex *extensionsv1alpha1.Extension, operation string) {
	Eventually(func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil {
			return err
		}
		metav1.SetMetaDataAnnotation(&ex.ObjectMeta, v1beta1constants.GardenerOperation, operation)
		return admin.Update(ctx, ex)
	}).Should(Succeed())
}

func gone(ctx SpecContext, obj client.Object) func() bool {
	return func() bool { return apierrors.IsNotFound(admin.Get(ctx, client.ObjectKeyFromObject(obj), obj)) }
}

// reportRulesInForce plays the agent of every Firewall with a machine as it
// reports once its rules are in force: into seed and shoot, the Firewall's
// generation applied. It returns the lastOperation of ex.
func reportRulesInForce(ctx SpecContext, namespace string, ex *extensionsv1alpha1.Extension) func() string {
	return func() string {
		for _, fw := range firewalls(ctx, namespace) {
			if fw.Status.MachineStatus == nil {
				continue
			}
			patch := client.MergeFrom(fw.DeepCopy())
			now := &metav1.Time{Time: time.Now()}
			fw.Status.AgentStatus = &firewallv1alpha1.AgentStatus{LastRunAgainstSeed: now, LastRunAgainstShoot: now, AppliedGeneration: fw.Generation}
			Expect(client.IgnoreNotFound(admin.Status().Patch(ctx, &fw, patch))).To(Succeed())
		}
		return lastOperation(ctx, ex)()
	}
}

// explainFirewalls says, when a wait fails, what the extension and the
// manager last reported: a failure in CI leaves nothing else to read.
func explainFirewalls(ctx SpecContext, namespace string, ex *extensionsv1alpha1.Extension) string {
	msg := "extension: " + lastOperation(ctx, ex)()
	if op := ex.Status.LastOperation; op != nil {
		msg += " (" + op.Description + ")"
	}
	for _, fw := range firewalls(ctx, namespace) {
		msg += fmt.Sprintf("; Firewall %s generation %d created %s annotations %v", fw.Name, fw.Generation, fw.CreationTimestamp, fw.Annotations)
		if m := fw.Status.MachineStatus; m != nil {
			msg += fmt.Sprintf(", machine %s", m.MachineID)
		}
		for _, c := range fw.Status.Conditions {
			msg += fmt.Sprintf(", %s=%s (%s)", c.Type, c.Status, c.Message)
		}
	}
	secrets := &corev1.SecretList{}
	if err := admin.List(ctx, secrets, client.InNamespace(constants.ShootNamespace)); err == nil {
		for _, s := range secrets.Items {
			msg += "; shoot Secret " + s.Name
		}
	}
	events := &corev1.EventList{}
	if err := admin.List(ctx, events, client.InNamespace(namespace)); err == nil {
		for _, e := range events.Items {
			msg += fmt.Sprintf("; event %s %s: %s", e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return msg
}

func firewalls(ctx SpecContext, namespace string) []firewallv1alpha1.Firewall {
	list := &firewallv1alpha1.FirewallList{}
	Expect(admin.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	return list.Items
}

// bootServiceAccounts are the boot identities of the shoot's firewalls, in
// the extension's namespace: while one exists, its boot tokens authenticate.
func bootServiceAccounts(ctx SpecContext, namespace string) []corev1.ServiceAccount {
	list := &corev1.ServiceAccountList{}
	Expect(admin.List(ctx, list, client.InNamespace(releaseNamespace), client.MatchingLabels{constants.LabelFirewallNamespace: namespace})).To(Succeed())
	return list.Items
}

// bootToken is the token in the boot kubeconfig a machine got in its userdata.
func bootToken(machineID string) string {
	for _, f := range provider.Userdata(machineID) {
		if f.Path == agentconfigv1alpha1.BootstrapKubeconfigPath {
			cfg, err := clientcmd.Load(f.Content)
			Expect(err).NotTo(HaveOccurred())
			for _, auth := range cfg.AuthInfos {
				return auth.Token
			}
		}
	}
	Fail("the machine got no boot kubeconfig")
	return ""
}

// csrFor is a firewall agent's client CSR.
func csrFor(namespace, name string) *certificatesv1.CertificateSigningRequest {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{
		CommonName: firewallv1alpha1.AgentUserName(namespace, name), Organization: []string{firewallv1alpha1.AgentGroup(namespace)},
	}}, key)
	Expect(err).NotTo(HaveOccurred())
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: firewallv1alpha1.CSRName(namespace, name)},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
			ExpirationSeconds: ptr.To[int32](3600),
		},
	}
}

// decision is the CSR's Approved or Denied condition type.
func decision(ctx SpecContext, csr *certificatesv1.CertificateSigningRequest) func() certificatesv1.RequestConditionType {
	return func() certificatesv1.RequestConditionType {
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(csr), csr)).To(Succeed())
		for _, c := range csr.Status.Conditions {
			return c.Type
		}
		return ""
	}
}

var _ = Describe("The extension under the chart's RBAC", func() {
	It("is elected leader and ready: every kind it watches can be listed and watched", func(ctx SpecContext) {
		Eventually(func() (int, error) {
			resp, err := http.Get("http://" + healthAddress + "/readyz")
			if err != nil {
				return 0, err
			}
			_ = resp.Body.Close()
			return resp.StatusCode, nil
		}).Should(Equal(http.StatusOK))
		Eventually(mgr.Elected()).Should(BeClosed())
		lease := &coordinationv1.Lease{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: app.LeaderElectionID}, lease)).To(Succeed())
		Expect(ptr.Deref(lease.Spec.HolderIdentity, "")).NotTo(BeEmpty())
		Consistently(managerErr).WithTimeout(2 * time.Second).ShouldNot(Receive())
	})

	It("registers its webhook with a CA it manages and serves the certificate it signed", func(ctx SpecContext) {
		mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
		Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKey{Name: envoyfilter.Name}, mwc)).To(Succeed())
			// The EnvoyFilter webhook and the one that holds provider-metal's firewall.
			g.Expect(mwc.Webhooks).To(HaveLen(2))
			g.Expect(mwc.Webhooks[1].Name).To(Equal(providerfirewall.Name))
			for _, wh := range mwc.Webhooks {
				g.Expect(wh.ClientConfig.CABundle).NotTo(BeEmpty(), wh.Name)
			}
			g.Expect(mwc.OwnerReferences).To(ContainElement(And(HaveField("Kind", "Namespace"), HaveField("Name", releaseNamespace))),
				"removing the extension's namespace removes its registration")
		}).Should(Succeed())
		svc := mwc.Webhooks[0].ClientConfig.Service
		Expect(svc.Name).To(Equal(app.WebhookServiceName))
		Expect(svc.Namespace).To(Equal(releaseNamespace))
		Expect(*svc.Port).To(BeEquivalentTo(opts.WebhookConfigServicePort))
		Expect(mwc.Webhooks[1].ClientConfig.Service).To(HaveField("Path", HaveValue(Equal(providerfirewall.Path))))
		Expect(mwc.Webhooks[1].ClientConfig.CABundle).To(Equal(mwc.Webhooks[0].ClientConfig.CABundle), "one CA for both")

		pool := x509.NewCertPool()
		Expect(pool.AppendCertsFromPEM(mwc.Webhooks[0].ClientConfig.CABundle)).To(BeTrue())
		Eventually(func() error {
			conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(opts.WebhookPort), &tls.Config{
				RootCAs: pool, ServerName: app.WebhookServiceName + "." + releaseNamespace + ".svc", MinVersion: tls.VersionTLS12,
			})
			if err != nil {
				return err
			}
			return conn.Close()
		}).Should(Succeed(), "the kube-apiserver reaches the webhook through the Service name and trusts its certificate")
		_, err := os.Stat(filepath.Join(opts.WebhookCertDir, "tls.key"))
		Expect(err).NotTo(HaveOccurred())

		secrets := &corev1.SecretList{}
		Expect(admin.List(ctx, secrets, client.InNamespace(releaseNamespace), client.MatchingLabels{"managed-by": "secrets-manager"})).To(Succeed())
		Expect(secrets.Items).To(ContainElement(HaveField("Name", HavePrefix("ca-firewall-webhook"))))
		Expect(secrets.Items).To(ContainElement(HaveField("Name", HavePrefix("firewall-webhook-server"))))
	})

	It("creates a firewall, approves its agent's CSR, migrates, restores and deletes it", func(ctx SpecContext) {
		namespace := "shoot--p--firewall"
		createShoot(ctx, namespace)
		ex := newExtension(namespace, "firewall", `{"size":"c1-xlarge-x86","image":"firewall-ubuntu-3.0","partition":"local","project":"p1","networks":["internet","tenant"]}`)
		Expect(admin.Create(ctx, ex)).To(Succeed())
		Eventually(lastOperation(ctx, ex)).Should(MatchRegexp(`^(Create|Reconcile) Processing$`), "waiting for the firewall to forward")

		var fw firewallv1alpha1.Firewall
		Eventually(func(g Gomega) {
			fws := firewalls(ctx, namespace)
			g.Expect(fws).To(HaveLen(1))
			g.Expect(fws[0].Status.MachineStatus).NotTo(BeNil())
			fw = fws[0]
		}).Should(Succeed())
		machineID := fw.Status.MachineStatus.MachineID
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.ShootManagedResourceName}, &resourcesv1alpha1.ManagedResource{})).To(Succeed(),
			"the shoot's CRDs and agent RBAC go through a ManagedResource")
		Expect(admin.Get(ctx, client.ObjectKey{Name: firewallv1alpha1.AgentUserName(namespace, fw.Name)}, &rbacv1.ClusterRoleBinding{})).To(Succeed())
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: firewallv1alpha1.AgentUserName(namespace, fw.Name)}, &rbacv1.Role{})).To(Succeed())

		By("the agent asks for its certificate with its boot token, a ServiceAccount token the chart's RBAC let the extension mint in its own namespace")
		Expect(bootServiceAccounts(ctx, namespace)).To(HaveLen(1))
		token := bootToken(machineID)
		agent, err := client.New(cp.WithBearerToken(token), client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		csr := csrFor(namespace, fw.Name)
		Expect(agent.Create(ctx, csr)).To(Succeed(), "the chart's agent CSR ClusterRole, bound by the extension, lets the token create it")
		Eventually(decision(ctx, csr)).Should(Equal(certificatesv1.CertificateApproved), "approved after a SubjectAccessReview")

		By("a CSR for that firewall from anyone else is denied")
		stranger := csrFor(namespace, fw.Name)
		stranger.Name, stranger.GenerateName = "", "stranger-"
		Expect(admin.Create(ctx, stranger)).To(Succeed())
		Eventually(decision(ctx, stranger)).Should(Equal(certificatesv1.CertificateDenied))

		By("the agent reports in: the Firewall is Ready and its token goes")
		Eventually(func(g Gomega) {
			current := &firewallv1alpha1.Firewall{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(&fw), current)).To(Succeed())
			patch := client.MergeFrom(current.DeepCopy())
			current.Status.AgentStatus = &firewallv1alpha1.AgentStatus{LastRunAgainstSeed: &metav1.Time{Time: time.Now()}}
			g.Expect(admin.Status().Patch(ctx, current, patch)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(current.Status.Conditions, firewallv1alpha1.ConditionReady)).To(BeTrue())
		}).Should(Succeed())
		Eventually(func() []corev1.ServiceAccount { return bootServiceAccounts(ctx, namespace) }).Should(BeEmpty())
		Eventually(reportRulesInForce(ctx, namespace, ex)).Should(MatchRegexp(`^(Create|Reconcile) Succeeded$`), "once the rules are in force")
		Eventually(func() gardencorev1beta1.ConditionStatus {
			Expect(admin.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			for _, c := range ex.Status.Conditions {
				if c.Type == gardencorev1beta1.ShootSystemComponentsHealthy {
					return c.Status
				}
			}
			return ""
		}).Should(Equal(gardencorev1beta1.ConditionTrue), "the health check reports it")

		By("migrating away")
		annotate(ctx, ex, v1beta1constants.GardenerOperationMigrate)
		Eventually(lastOperation(ctx, ex)).Should(Equal("Migrate Succeeded"))
		state := ex.Status.State.DeepCopy()
		Expect(admin.Delete(ctx, ex)).To(Succeed())
		Eventually(gone(ctx, ex)).Should(BeTrue())
		Expect(firewalls(ctx, namespace)).To(BeEmpty())

		By("restoring")
		ex = newExtension(namespace, "firewall", string(ex.Spec.ProviderConfig.Raw))
		Expect(framework.PrepareRestore(ctx, admin, ex, state, time.Minute)).To(Succeed())
		annotate(ctx, ex, v1beta1constants.GardenerOperationRestore)
		// Restoring the objects is retried until the manager's cache has them:
		// on a loaded machine (make test) that took longer than a minute.
		Eventually(lastOperation(ctx, ex)).WithTimeout(3*time.Minute).Should(MatchRegexp(`^(Restore|Reconcile) Processing$`), "the restore waits for the agent to report into this seed")
		Eventually(func(g Gomega) {
			fws := firewalls(ctx, namespace)
			g.Expect(fws).To(HaveLen(1))
			g.Expect(fws[0].Status.MachineStatus).NotTo(BeNil())
			g.Expect(fws[0].Status.MachineStatus.MachineID).To(Equal(machineID))
		}).Should(Succeed())
		delivered := &corev1.Secret{}
		Eventually(func() error {
			return admin.Get(ctx, client.ObjectKey{Namespace: constants.ShootNamespace, Name: firewallv1alpha1.DeliveredBootstrapSecretName(fw.Name)}, delivered)
		}).Should(Succeed(), func() string {
			return "the new bootstrap kubeconfig is delivered through the shoot (read from the seed's gardener Secret); " + explainFirewalls(ctx, namespace, ex)
		})
		restored := firewalls(ctx, namespace)[0]
		deliveryKey, err := base64.StdEncoding.DecodeString(restored.Annotations[firewallv1alpha1.AnnotationDeliveryKey])
		Expect(err).NotTo(HaveOccurred())
		d, err := seal.Verify(deliveryKey, namespace, fw.Name, delivered.Data[firewallv1alpha1.DeliveredBootstrapKey])
		Expect(err).NotTo(HaveOccurred(), "signed with the Firewall's delivery key, which the chart's RBAC let the extension keep in a seed Secret")
		envelope := seal.Envelope{}
		Expect(json.Unmarshal(d.Sealed, &envelope)).To(Succeed(), "sealed to the agent's key the approver pinned")
		Expect(envelope.Version).To(Equal(seal.Version))
		Expect(string(delivered.Data[firewallv1alpha1.DeliveredBootstrapKey])).NotTo(ContainSubstring("token"))
		Eventually(reportRulesInForce(ctx, namespace, ex)).Should(MatchRegexp(`^(Restore|Reconcile) Succeeded$`), func() string {
			return "once the agent reports its rules in force; " + explainFirewalls(ctx, namespace, ex)
		})

		By("deleting")
		Expect(admin.Delete(ctx, ex)).To(Succeed())
		Eventually(gone(ctx, ex)).Should(BeTrue())
		Expect(provider.IDs()).NotTo(ContainElement(machineID))
		Expect(bootServiceAccounts(ctx, namespace)).To(BeEmpty())
		Expect(admin.Get(ctx, client.ObjectKey{Name: firewallv1alpha1.AgentUserName(namespace, fw.Name)}, &rbacv1.ClusterRoleBinding{})).To(Satisfy(apierrors.IsNotFound))
	})

	It("enforces a shoot's ACL and removes it again", func(ctx SpecContext) {
		ingress := ensureIngress(ctx)
		namespace := "shoot--p--acl"
		createShoot(ctx, namespace)
		gardeners := &istionetworkingv1alpha3.EnvoyFilter{ObjectMeta: metav1.ObjectMeta{Name: namespace + constants.GardenerTLSTerminationSuffix, Namespace: ingress}}
		gardeners.Spec.WorkloadSelector = &istioapinetworkingv1alpha3.WorkloadSelector{Labels: gatewayLabels}
		gardeners.Spec.ConfigPatches = []*istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch{{ApplyTo: istioapinetworkingv1alpha3.EnvoyFilter_HTTP_ROUTE}}
		Expect(admin.Create(ctx, gardeners)).To(Succeed())

		ex := newExtension(namespace, "acl", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24"]}}`)
		Expect(admin.Create(ctx, ex)).To(Succeed())
		Eventually(lastOperation(ctx, ex)).Should(MatchRegexp(`^(Create|Reconcile) Succeeded$`))
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.ACLManagedResourceName}, &resourcesv1alpha1.ManagedResource{})).To(Succeed())
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(gardeners), gardeners)).To(Succeed())
		Expect(gardeners.Annotations).To(HaveKey(constants.ACLPolicyHashAnnotation), "Gardener's EnvoyFilter was touched for the webhook")

		Expect(admin.Delete(ctx, ex)).To(Succeed())
		Eventually(gone(ctx, ex)).Should(BeTrue())
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.ACLManagedResourceName}, &resourcesv1alpha1.ManagedResource{})).To(Satisfy(apierrors.IsNotFound))
	})
})
