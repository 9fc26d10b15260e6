package droplog_test

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/droplog"
)

var _ = Describe("CertificateFiles", func() {
	var dir string

	// write puts a new pair into dir, as the extension's rotation does, and
	// returns its certificate.
	write := func() []byte {
		GinkgoHelper()
		pair, err := droplog.SelfSignedCertificate()
		Expect(err).NotTo(HaveOccurred())
		key, err := x509.MarshalECPrivateKey(pair.PrivateKey.(*ecdsa.PrivateKey))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: pair.Certificate[0]}), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: key}), 0o600)).To(Succeed())
		return pair.Certificate[0]
	}
	served := func(get func(*tls.ClientHelloInfo) (*tls.Certificate, error)) []byte {
		GinkgoHelper()
		c, err := get(nil)
		Expect(err).NotTo(HaveOccurred())
		return c.Certificate[0]
	}

	BeforeEach(func() { dir = GinkgoT().TempDir() })

	It("serves a rotated pair at the next handshake, even one written within the same clock tick", func() {
		first := write()
		get := droplog.CertificateFiles(dir)
		Expect(served(get)).To(Equal(first))
		Expect(served(get)).To(Equal(first), "unchanged")

		stamp := time.Now().Add(-time.Hour)
		Expect(os.Chtimes(filepath.Join(dir, "tls.crt"), stamp, stamp)).To(Succeed())
		Expect(served(get)).To(Equal(first))
		second := write()
		// The new files carry the old files' time, as files written within
		// one tick of the kernel's clock do.
		Expect(os.Chtimes(filepath.Join(dir, "tls.crt"), stamp, stamp)).To(Succeed())
		Expect(os.Chtimes(filepath.Join(dir, "tls.key"), stamp, stamp)).To(Succeed())
		Expect(served(get)).To(Equal(second))
	})

	It("keeps the served pair while the files do not make one", func() {
		first := write()
		get := droplog.CertificateFiles(dir)
		Expect(served(get)).To(Equal(first))

		Expect(os.WriteFile(filepath.Join(dir, "tls.key"), []byte("not a key"), 0o600)).To(Succeed())
		Expect(served(get)).To(Equal(first))
		Expect(os.Remove(filepath.Join(dir, "tls.crt"))).To(Succeed())
		Expect(served(get)).To(Equal(first))

		second := write()
		Expect(served(get)).To(Equal(second))
	})

	It("fails naming the files when there is no pair to serve", func() {
		Expect(os.WriteFile(filepath.Join(dir, "tls.crt"), []byte("garbage"), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "tls.key"), []byte("garbage"), 0o600)).To(Succeed())
		_, err := droplog.CertificateFiles(dir)(nil)
		Expect(err).To(MatchError(ContainSubstring(filepath.Join(dir, "tls.crt"))))

		_, err = droplog.CertificateFiles(GinkgoT().TempDir())(nil)
		Expect(err).To(MatchError(ContainSubstring("tls.crt")))
	})
})
