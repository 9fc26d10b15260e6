package agentseed_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/selfupdate"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

// The Firewall's agentVersion, agentURL and agentSHA256 reach the agent's
// self-update, and its verdict reaches the Firewall's status. Only refusals
// here: the switch itself is the agent suite's packet test.
var _ = Describe("Agent self-update from the seed", func() {
	It("reports Disabled without a key, then refuses a downgrade and a bad signature in its AgentStatus", func(ctx SpecContext) {
		const name = "fw-update"
		files := seedAgent(ctx, seedA, name, "10.20.0.0/24", ", selfUpdate: {enabled: true}")
		dir, configPath := files.dir, files.config
		exe := filepath.Join(dir, "firewall-agent")
		Expect(os.WriteFile(exe, []byte("installed"), 0o755)).To(Succeed())

		binary := []byte("v1.1.0 binary")
		sum := sha256.Sum256(binary)
		digest := hex.EncodeToString(sum[:])
		_, other, err := ed25519.GenerateKey(rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/agent":
				_, _ = w.Write(binary)
			case "/agent.sig":
				_, _ = w.Write(ed25519.Sign(other, selfupdate.SignedMessage("v1.1.0", digest)))
			default:
				http.NotFound(w, r)
			}
		}))
		DeferCleanup(srv.Close)

		selfUpdate := func() *firewallv1alpha1.SelfUpdateStatus {
			fw := &firewallv1alpha1.Firewall{}
			Expect(seedA.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, fw)).To(Succeed())
			if fw.Status.AgentStatus == nil {
				return nil
			}
			return fw.Status.AgentStatus.SelfUpdate
		}
		run := func(keyPath string) (stop func()) {
			a := &agent.Agent{ConfigPath: configPath, Applier: &recorder{}, Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil)),
				PollInterval: 200 * time.Millisecond, SeedInterval: 300 * time.Millisecond, Version: "v1.0.0",
				Executable: exe, UpdatePublicKey: keyPath}
			stopAgent := framework.RunInBackground(a.Run)
			stop = func() { Expect(stopAgent()).To(Succeed()) }
			DeferCleanup(stop)
			return stop
		}

		By("without a key: Disabled, and why")
		stop := run("")
		Eventually(selfUpdate).WithTimeout(time.Minute).Should(And(Not(BeNil()),
			HaveField("State", selfupdate.StateDisabled), HaveField("Message", ContainSubstring("no update public key is configured"))))
		stop()

		By("with the operator's key, a downgrade named in the Firewall is refused")
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		der, err := x509.MarshalPKIXPublicKey(pub)
		Expect(err).NotTo(HaveOccurred())
		keyPath := filepath.Join(dir, "update.pub")
		Expect(os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)).To(Succeed())
		setRelease := func(version string) {
			fw := &firewallv1alpha1.Firewall{}
			Expect(seedA.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, fw)).To(Succeed())
			fw.Spec.AgentVersion, fw.Spec.AgentURL, fw.Spec.AgentSHA256 = version, srv.URL+"/agent", digest
			Expect(seedA.client.Update(ctx, fw)).To(Succeed())
		}
		setRelease("v0.9.0")
		run(keyPath)
		Eventually(selfUpdate).WithTimeout(30 * time.Second).Should(And(Not(BeNil()), HaveField("State", selfupdate.StateRefused),
			HaveField("WantedVersion", "v0.9.0"), HaveField("Message", ContainSubstring("refusing the downgrade from v1.0.0 to v0.9.0"))))

		By("a release signed by another key is refused, nothing staged or installed")
		setRelease("v1.1.0")
		Eventually(selfUpdate).WithTimeout(30 * time.Second).Should(And(HaveField("State", selfupdate.StateRefused),
			HaveField("WantedVersion", "v1.1.0"), HaveField("Message", ContainSubstring("bad signature"))))
		Expect(exe + selfupdate.StagedSuffix).NotTo(BeAnExistingFile())
		Expect(os.ReadFile(exe)).To(Equal([]byte("installed")))
	})
})
