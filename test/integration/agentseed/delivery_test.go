package agentseed_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bootstrap"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/seedsource"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seal"
)

var _ = Describe("A bootstrap kubeconfig delivered through the shoot", func() {
	It("is taken only when its seed signed it for this firewall, newer than the last, unexpired; a refused one or one whose seed does not answer changes nothing on disk", func(ctx SpecContext) {
		const name = "fw-delivery"
		dir := GinkgoT().TempDir()
		cfg := agentconfigv1alpha1.SeedSource{Namespace: namespace, BootstrapKubeconfig: filepath.Join(dir, "bootstrap.kubeconfig"), Kubeconfig: filepath.Join(dir, "seed.kubeconfig")}
		prepareSeed(ctx, seedA, name, "10.30.0.0/24", cfg.BootstrapKubeconfig)

		By("the seed names the Firewall's delivery key; the agent pins it when it reads its Firewall")
		deliveryKey := newKey()
		deliveryPub := pkix(&deliveryKey.PublicKey)
		fw := &firewallv1alpha1.Firewall{}
		Expect(seedA.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, fw)).To(Succeed())
		metav1.SetMetaDataAnnotation(&fw.ObjectMeta, firewallv1alpha1.AnnotationDeliveryKey, base64.StdEncoding.EncodeToString(deliveryPub))
		Expect(seedA.client.Update(ctx, fw)).To(Succeed())
		src := &seedsource.Source{Config: cfg, Name: name, Version: "v-test", Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil))}
		_, err := src.Firewall(ctx)
		Expect(err).NotTo(HaveOccurred())
		statePath := filepath.Join(dir, "delivery.json")
		info, err := os.Stat(statePath)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))

		agentKey, err := bootstrap.LoadOrCreateKey(filepath.Join(dir, "agent.key"))
		Expect(err).NotTo(HaveOccurred())
		agentPub := pkix(&agentKey.PublicKey)
		kubeconfigBPath := filepath.Join(GinkgoT().TempDir(), "seed-b.kubeconfig")
		prepareSeed(ctx, seedB, name, "10.31.0.0/24", kubeconfigBPath)
		kubeconfigB, err := os.ReadFile(kubeconfigBPath)
		Expect(err).NotTo(HaveOccurred())
		deadSeed, err := credentials.BootstrapKubeconfig("https://127.0.0.1:1", seedB.cp.Config.CAData, "a-token")
		Expect(err).NotTo(HaveOccurred())

		// box is what the shoot holds: kubeconfig sealed to sealTo, signed
		// with signer for firewall, at generation gen, expiring at expires.
		type box struct {
			signer     *ecdsa.PrivateKey
			firewall   string
			sealTo     []byte
			gen        int64
			expires    time.Time
			kubeconfig []byte
		}
		valid := func() box {
			return box{signer: deliveryKey, firewall: namespace + "/" + name, sealTo: agentPub, gen: time.Now().UnixNano(), expires: time.Now().Add(time.Hour), kubeconfig: kubeconfigB}
		}
		encode := func(b box) []byte {
			GinkgoHelper()
			sealed, err := seal.Seal(b.sealTo, namespace, name, b.kubeconfig)
			Expect(err).NotTo(HaveOccurred())
			signed, err := seal.Sign(b.signer, seal.Delivery{Firewall: b.firewall, Generation: b.gen, Expires: b.expires, Sealed: sealed})
			Expect(err).NotTo(HaveOccurred())
			return signed
		}
		files := []string{cfg.BootstrapKubeconfig, cfg.Kubeconfig, statePath, filepath.Join(dir, "agent.key")}
		snapshot := func() map[string]string {
			GinkgoHelper()
			out := map[string]string{}
			for _, f := range files {
				data, err := os.ReadFile(f)
				Expect(err).NotTo(HaveOccurred())
				out[f] = string(data)
			}
			return out
		}
		before := snapshot()

		By("refusing what the shoot's admins can write: a box sealed to the agent's public key but not signed with the delivery key, and the rest")
		forged, wrongFirewall, expired, otherAgent := valid(), valid(), valid(), valid()
		forged.signer = newKey()
		wrongFirewall.firewall = namespace + "/fw-other"
		expired.expires = time.Now().Add(-time.Second)
		otherAgent.sealTo = pkix(&newKey().PublicKey)
		for what, b := range map[string]box{"forged": forged, "another firewall's": wrongFirewall, "expired": expired, "sealed to another agent": otherAgent} {
			err := src.TakeDelivered(ctx, encode(b))
			Expect(err).To(MatchError(seedsource.ErrRefused), what)
			Expect(len(err.Error())).To(BeNumerically("<", 300), what)
			Expect(snapshot()).To(Equal(before), "a refused box changes nothing: %s", what)
		}
		err = src.TakeDelivered(ctx, encode(forged))
		Expect(err).To(MatchError(ContainSubstring("not signed with this firewall's delivery key " + seal.KeyID(deliveryPub))))

		By("a box the seed signed whose seed does not answer: nothing on disk changes, and the agent keeps reading its seed")
		dead := valid()
		dead.kubeconfig = deadSeed
		shortCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		err = src.TakeDelivered(shortCtx, encode(dead))
		Expect(err).To(HaveOccurred())
		Expect(err).NotTo(MatchError(seedsource.ErrRefused))
		Expect(snapshot()).To(Equal(before))
		got, err := src.Firewall(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Spec.InternalPrefixes).To(Equal([]string{"10.30.0.0/24"}), "still seed A")

		By("taking a box the seed signed: bootstrapping at seed B, then writing the kubeconfig and the generation")
		good := valid()
		Expect(src.TakeDelivered(ctx, encode(good))).To(Succeed())
		got, err = src.Firewall(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Spec.InternalPrefixes).To(Equal([]string{"10.31.0.0/24"}), "seed B")
		Expect(os.ReadFile(cfg.BootstrapKubeconfig)).To(Equal(kubeconfigB))
		state := struct{ Generation int64 }{}
		data, err := os.ReadFile(statePath)
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Unmarshal(data, &state)).To(Succeed())
		Expect(state.Generation).To(Equal(good.gen))

		By("the same box again is nothing new; an older one the seed signed is a replay and refused")
		Expect(src.TakeDelivered(ctx, encode(good))).To(MatchError(seedsource.ErrNothingNew))
		after := snapshot()
		replay := valid()
		replay.gen = good.gen - 1
		replay.kubeconfig = deadSeed
		Expect(src.TakeDelivered(ctx, encode(replay))).To(MatchError(ContainSubstring("a replayed delivery")))
		Expect(snapshot()).To(Equal(after))
	})
})

func newKey() *ecdsa.PrivateKey {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	return key
}

func pkix(pub *ecdsa.PublicKey) []byte {
	GinkgoHelper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	Expect(err).NotTo(HaveOccurred())
	return der
}
