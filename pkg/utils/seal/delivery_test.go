package seal_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seal"
)

var _ = Describe("Sign and Verify", func() {
	var (
		key    *ecdsa.PrivateKey
		pubDER []byte
		d      seal.Delivery
	)
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		return k
	}
	BeforeEach(func() {
		key = newKey()
		var err error
		pubDER, err = x509.MarshalPKIXPublicKey(&key.PublicKey)
		Expect(err).NotTo(HaveOccurred())
		d = seal.Delivery{Firewall: "shoot--p--s/fw-0", Generation: 42, Expires: time.Unix(1800000000, 0).UTC(), Sealed: []byte("box")}
	})

	It("verifies what the delivery key signed for the same firewall", func() {
		box, err := seal.Sign(key, d)
		Expect(err).NotTo(HaveOccurred())
		got, err := seal.Verify(pubDER, "shoot--p--s", "fw-0", box)
		Expect(err).NotTo(HaveOccurred())
		Expect(*got).To(Equal(d))
	})

	It("refuses a delivery signed with another key: the agent's public key is no secret, the delivery key is", func() {
		box, err := seal.Sign(newKey(), d)
		Expect(err).NotTo(HaveOccurred())
		_, err = seal.Verify(pubDER, "shoot--p--s", "fw-0", box)
		Expect(err).To(MatchError(ContainSubstring("not signed with this firewall's delivery key " + seal.KeyID(pubDER))))
	})

	It("refuses a delivery for another firewall", func() {
		box, err := seal.Sign(key, d)
		Expect(err).NotTo(HaveOccurred())
		_, err = seal.Verify(pubDER, "shoot--p--s", "fw-1", box)
		Expect(err).To(MatchError(ContainSubstring(`for firewall "shoot--p--s/fw-0", not "shoot--p--s/fw-1"`)))
	})

	It("refuses a changed payload: a later generation or expiry written into a signed box", func() {
		box, err := seal.Sign(key, d)
		Expect(err).NotTo(HaveOccurred())
		var s map[string]any
		Expect(json.Unmarshal(box, &s)).To(Succeed())
		d.Generation = 1 << 62
		s["payload"], err = json.Marshal(d)
		Expect(err).NotTo(HaveOccurred())
		tampered, err := json.Marshal(s)
		Expect(err).NotTo(HaveOccurred())
		_, err = seal.Verify(pubDER, "shoot--p--s", "fw-0", tampered)
		Expect(err).To(MatchError(ContainSubstring("not signed")))
	})

	It("refuses garbage, an unsigned sealed box, another version and oversized input with a short error", func() {
		unsigned, err := seal.Seal(pubDER, "shoot--p--s", "fw-0", []byte("kubeconfig"))
		Expect(err).NotTo(HaveOccurred())
		for _, in := range [][]byte{[]byte("kubeconfig: plain"), unsigned, []byte(`{"version":"` + strings.Repeat("v", 5000) + `"}`), []byte(strings.Repeat("x", 70<<10))} {
			_, err := seal.Verify(pubDER, "shoot--p--s", "fw-0", in)
			Expect(err).To(HaveOccurred())
			Expect(len(err.Error())).To(BeNumerically("<", 200))
		}
	})
})
