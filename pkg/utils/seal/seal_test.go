package seal_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seal"
)

var _ = Describe("Seal and Open", func() {
	var (
		key    *ecdsa.PrivateKey
		pubDER []byte
	)
	secret := []byte("apiVersion: v1\nkind: Config\n# token: abc\n")

	BeforeEach(func() {
		var err error
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		pubDER, err = x509.MarshalPKIXPublicKey(&key.PublicKey)
		Expect(err).NotTo(HaveOccurred())
	})

	It("opens with the agent's key for the same firewall, and the box holds no plaintext", func() {
		box, err := seal.Seal(pubDER, "shoot--p--s", "fw-0", secret)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(box)).NotTo(ContainSubstring("token"))
		Expect(string(box)).NotTo(ContainSubstring("kind: Config"))
		got, err := seal.Open(key, "shoot--p--s", "fw-0", box)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(secret))
	})

	It("does not open with another key, and says whose key it was sealed to", func() {
		box, err := seal.Seal(pubDER, "shoot--p--s", "fw-0", secret)
		Expect(err).NotTo(HaveOccurred())
		other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		_, err = seal.Open(other, "shoot--p--s", "fw-0", box)
		Expect(err).To(MatchError(ContainSubstring("sealed to key " + seal.KeyID(pubDER))))
	})

	It("does not open for another firewall, even with the same key", func() {
		box, err := seal.Seal(pubDER, "shoot--p--s", "fw-0", secret)
		Expect(err).NotTo(HaveOccurred())
		_, err = seal.Open(key, "shoot--p--s", "fw-1", box)
		Expect(err).To(MatchError(ContainSubstring("does not open")))
	})

	It("refuses a tampered box", func() {
		box, err := seal.Seal(pubDER, "shoot--p--s", "fw-0", secret)
		Expect(err).NotTo(HaveOccurred())
		env := seal.Envelope{}
		Expect(json.Unmarshal(box, &env)).To(Succeed())
		env.Sealed[len(env.Sealed)-1] ^= 1
		tampered, err := json.Marshal(env)
		Expect(err).NotTo(HaveOccurred())
		_, err = seal.Open(key, "shoot--p--s", "fw-0", tampered)
		Expect(err).To(HaveOccurred())
	})

	It("refuses garbage, another version and oversized input with a short error", func() {
		for _, in := range [][]byte{[]byte("kubeconfig: plain"), []byte(`{"version":"v0"}`), []byte(strings.Repeat("x", 70<<10))} {
			_, err := seal.Open(key, "ns", "fw", in)
			Expect(err).To(HaveOccurred())
			Expect(len(err.Error())).To(BeNumerically("<", 200))
		}
	})

	It("refuses a key that cannot agree on a secret", func() {
		_, err := seal.Seal([]byte("not a key"), "ns", "fw", secret)
		Expect(err).To(MatchError(ContainSubstring("agent key")))
	})
})
