package selfupdate_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/selfupdate"
)

// releaseServer serves files by path; a path may be given a handler of its own.
type releaseServer struct {
	*httptest.Server
	mu       sync.Mutex
	files    map[string][]byte
	handlers map[string]http.HandlerFunc
}

func newReleaseServer() *releaseServer {
	s := &releaseServer{files: map[string][]byte{}, handlers: map[string]http.HandlerFunc{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		h := s.handlers[r.URL.Path]
		data, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		switch {
		case h != nil:
			h(w, r)
		case !ok:
			http.NotFound(w, r)
		default:
			_, _ = w.Write(data)
		}
	}))
	DeferCleanup(s.Close)
	return s
}

func (s *releaseServer) put(path string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = data
}

func (s *releaseServer) handle(path string, h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[path] = h
}

func newKey() (ed25519.PublicKey, ed25519.PrivateKey) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	return pub, priv
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// publish serves a binary and its signature for version under /name.
func publish(s *releaseServer, priv ed25519.PrivateKey, name, version string, data []byte) selfupdate.Release {
	sum := digest(data)
	s.put("/"+name, data)
	s.put("/"+name+".sig", ed25519.Sign(priv, selfupdate.SignedMessage(version, sum)))
	return selfupdate.Release{Version: version, URL: s.URL + "/" + name, SHA256: sum}
}

var _ = Describe("signatures", func() {
	It("reads the key openssl writes and verifies what hack/sign-agent-release.sh signs with openssl", func() {
		if _, err := exec.LookPath("openssl"); err != nil {
			Skip("openssl is not installed")
		}
		dir := GinkgoT().TempDir()
		run := func(args ...string) {
			out, err := exec.Command("openssl", args...).CombinedOutput()
			ExpectWithOffset(1, err).NotTo(HaveOccurred(), string(out))
		}
		run("genpkey", "-algorithm", "ed25519", "-out", filepath.Join(dir, "key.pem"))
		run("pkey", "-in", filepath.Join(dir, "key.pem"), "-pubout", "-out", filepath.Join(dir, "pub.pem"))
		bin := filepath.Join(dir, "firewall-agent")
		Expect(os.WriteFile(bin, []byte("the binary"), 0o755)).To(Succeed())
		script, err := filepath.Abs("../../../hack/sign-agent-release.sh")
		Expect(err).NotTo(HaveOccurred())
		out, err := exec.Command(script, filepath.Join(dir, "key.pem"), "v1.2.3", bin).Output()
		Expect(err).NotTo(HaveOccurred(), "hack/sign-agent-release.sh")
		sum := digest([]byte("the binary"))
		Expect(string(out)).To(Equal(sum+"\n"), "it prints the digest for agentSHA256")

		key, err := selfupdate.LoadPublicKey(filepath.Join(dir, "pub.pem"))
		Expect(err).NotTo(HaveOccurred())
		raw, err := os.ReadFile(bin + ".sig")
		Expect(err).NotTo(HaveOccurred())
		sig, err := selfupdate.ParseSignature(raw)
		Expect(err).NotTo(HaveOccurred())
		Expect(selfupdate.Verify(key, "v1.2.3", sum, sig)).To(Succeed())
		b64, err := selfupdate.ParseSignature([]byte(base64.StdEncoding.EncodeToString(raw) + "\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(b64).To(Equal(sig), "base64 is taken too")

		By("the same signature does not cover another version of the same binary")
		Expect(selfupdate.Verify(key, "v9.9.9", sum, sig)).To(MatchError(ContainSubstring("bad signature")))
	})

	It("refuses keys that are not Ed25519 public keys", func() {
		_, err := selfupdate.ParsePublicKey([]byte("nonsense"))
		Expect(err).To(MatchError(ContainSubstring(`not a PEM "PUBLIC KEY" block`)))
		pub, _ := newKey()
		der, err := x509.MarshalPKIXPublicKey(pub)
		Expect(err).NotTo(HaveOccurred())
		got, err := selfupdate.ParsePublicKey(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(pub))
		_, err = selfupdate.ParseSignature([]byte("short"))
		Expect(err).To(MatchError(ContainSubstring("neither 64 raw bytes nor their base64")))
	})
})

// fetch runs an Updater's download of rel into dir and returns its status
// once the download ended.
func fetch(dir string, key ed25519.PublicKey, rel selfupdate.Release, mutate func(*selfupdate.Updater)) *selfupdate.Updater {
	u := newUpdater(dir, key)
	if mutate != nil {
		mutate(u)
	}
	u.Start()
	u.Offer(context.Background(), &rel)
	Eventually(func() string { return u.Status().Message }).ShouldNot(HavePrefix("downloading"))
	return u
}

var _ = Describe("downloads", func() {
	var (
		dir  string
		srv  *releaseServer
		pub  ed25519.PublicKey
		priv ed25519.PrivateKey
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		srv = newReleaseServer()
		pub, priv = newKey()
	})
	staged := func() string { return filepath.Join(dir, "firewall-agent"+selfupdate.StagedSuffix) }

	It("stages a release whose digest and signature match, executable", func() {
		rel := publish(srv, priv, "agent", "v1.1.0", []byte("new binary"))
		u := fetch(dir, pub, rel, nil)
		Expect(u.Status().State).To(Equal(selfupdate.StateUpdating))
		Expect(u.Status().Message).To(Equal("verified; switching to it"))
		info, err := os.Stat(staged())
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o755)))
	})

	DescribeTable("refuses, stages nothing and says why",
		func(prepare func(rel *selfupdate.Release), message string) {
			rel := publish(srv, priv, "agent", "v1.1.0", []byte("new binary"))
			prepare(&rel)
			u := fetch(dir, pub, rel, func(u *selfupdate.Updater) { u.MaxBytes = 1 << 10 })
			Expect(u.Status().State).To(Equal(selfupdate.StateRefused))
			Expect(u.Status().Message).To(ContainSubstring(message))
			Expect(staged()).NotTo(BeAnExistingFile())
		},
		Entry("a wrong checksum", func(rel *selfupdate.Release) { rel.SHA256 = digest([]byte("other")) }, "wrong checksum"),
		Entry("a binary replaced on the server", func(rel *selfupdate.Release) { srv.put("/agent", []byte("tampered")) }, "wrong checksum"),
		Entry("a signature of another key", func(rel *selfupdate.Release) {
			_, other := newKey()
			srv.put("/agent.sig", ed25519.Sign(other, selfupdate.SignedMessage(rel.Version, rel.SHA256)))
		}, "bad signature"),
		Entry("a signature of another version (a relabelled release)", func(rel *selfupdate.Release) {
			srv.put("/agent.sig", ed25519.Sign(priv, selfupdate.SignedMessage("v1.0.9", rel.SHA256)))
		}, "bad signature"),
		Entry("a missing signature", func(rel *selfupdate.Release) { rel.URL += "-unsigned"; srv.put("/agent-unsigned", []byte("x")) }, "404"),
		Entry("a missing binary", func(rel *selfupdate.Release) { rel.URL = srv.URL + "/gone"; srv.put("/gone.sig", make([]byte, 64)) }, "HTTP 404"),
		Entry("a truncated download", func(rel *selfupdate.Release) {
			srv.handle("/agent", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(100))
				_, _ = w.Write([]byte("new"))
			})
		}, "truncated"),
		Entry("a binary above the size bound", func(rel *selfupdate.Release) {
			big := make([]byte, 2<<10)
			*rel = publish(srv, priv, "agent", "v1.1.0", big)
		}, "more than the limit of 1024"),
		Entry("a release without digest", func(rel *selfupdate.Release) { rel.SHA256 = "" }, "names no sha256"),
		Entry("a downgrade", func(rel *selfupdate.Release) { rel.Version = "v0.9.0" }, "refusing the downgrade from v1.0.0 to v0.9.0"),
		Entry("a version that is not semantic", func(rel *selfupdate.Release) { rel.Version = "latest" }, "not a semantic version"),
	)

	It("takes a downgrade when allowed", func() {
		rel := publish(srv, priv, "agent", "v0.9.0", []byte("old binary"))
		u := fetch(dir, pub, rel, func(u *selfupdate.Updater) { u.AllowDowngrade = true })
		Expect(u.Status().State).To(Equal(selfupdate.StateUpdating))
	})

	It("gives up a download that takes longer than its timeout", func() {
		release := make(chan struct{})
		DeferCleanup(func() { close(release) })
		rel := publish(srv, priv, "agent", "v1.1.0", []byte("new binary"))
		srv.handle("/agent", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		u := fetch(dir, pub, rel, func(u *selfupdate.Updater) { u.DownloadTimeout = 200 * time.Millisecond })
		Expect(u.Status().State).To(Equal(selfupdate.StateRefused))
		Expect(u.Status().Message).To(ContainSubstring("context deadline exceeded"))
	})
})
