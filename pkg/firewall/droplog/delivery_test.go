package droplog_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	secretsutils "github.com/gardener/gardener/pkg/utils/secrets"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/droplog"
)

// receiverCertificate makes a CA and a serving certificate of it for name,
// as the extension does with Gardener's secrets utilities.
func receiverCertificate(name string) ([]byte, tls.Certificate) {
	GinkgoHelper()
	ca, err := (&secretsutils.CertificateSecretConfig{Name: "ca-firewall-drop", CommonName: "ca-firewall-drop", CertType: secretsutils.CACert}).GenerateCertificate()
	Expect(err).NotTo(HaveOccurred())
	srv, err := (&secretsutils.CertificateSecretConfig{Name: "firewall-drop", CommonName: "firewall-drop", DNSNames: []string{name},
		CertType: secretsutils.ServerCert, SigningCA: ca}).GenerateCertificate()
	Expect(err).NotTo(HaveOccurred())
	cert, err := tls.X509KeyPair(srv.CertificatePEM, srv.PrivateKeyPEM)
	Expect(err).NotTo(HaveOccurred())
	return ca.CertificatePEM, cert
}

// syncBuffer is the receiver's stdout.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}

// recorder counts like the agent's metrics.
type recorder struct {
	mu         sync.Mutex
	lost       map[string]uint64
	ok, failed int
}

func (r *recorder) Event(string) {}
func (r *recorder) Lost(reason string, n uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lost[reason] += n
}
func (r *recorder) Batch(ok bool, _ int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		r.ok++
	} else {
		r.failed++
	}
}

var _ = Describe("Sender and Receiver", func() {
	const agentUser = "system:serviceaccount:kube-system:firewall-agent"
	var (
		out    *syncBuffer
		server *httptest.Server
		// caPEM is the CA bundle the sender verifies the receiver with,
		// cert the receiver's certificate of that CA.
		caPEM []byte
		cert  tls.Certificate
		// users maps the tokens the fake API knows to their user.
		users map[string]string
		rec   *recorder
		q     *droplog.Queue
		token string
	)
	BeforeEach(func() {
		out, rec, q, token = &syncBuffer{}, &recorder{lost: map[string]uint64{}}, droplog.NewQueue(100), "agent-token"
		users = map[string]string{"agent-token": agentUser, "other-token": "system:serviceaccount:default:intruder"}
		client := fake.NewClientset()
		client.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
			tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
			user, ok := users[tr.Spec.Token]
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: ok, User: authenticationv1.UserInfo{Username: user}, Audiences: tr.Spec.Audiences}
			return true, tr, nil
		})
		log := slog.New(slog.DiscardHandler)
		caPEM, cert = receiverCertificate(droplog.ServerName)
		server = httptest.NewUnstartedServer(&droplog.Receiver{Client: client, AllowedUsers: []string{agentUser}, Out: out, Log: log})
		server.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		server.StartTLS()
		DeferCleanup(server.Close)
	})

	send := func() *droplog.Sender {
		v := &droplog.Verifier{Load: func(context.Context) ([]byte, error) { return caPEM, nil }}
		return &droplog.Sender{
			Queue: q, Firewall: "fw-1", BatchSize: 10, Interval: 50 * time.Millisecond,
			Endpoint: func(context.Context) (string, error) { return server.URL + droplog.EventsPath, nil },
			Token:    func(context.Context) (string, error) { return token, nil },
			Client:   droplog.NewHTTPClient(v), Verifier: v, Recorder: rec, Log: slog.New(slog.DiscardHandler),
		}
	}

	It("prints one JSON line per event with the firewall, and the count of lost events", func(ctx SpecContext) {
		for i := range 25 {
			q.Push(droplog.Event{Action: "drop", Context: "drop forward default-deny", Protocol: "udp", Source: "10.0.0.5", Destination: "192.0.2.7", DestinationPort: uint16(1000 + i)})
		}
		q.Lose(3)
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		go send().Run(runCtx)
		Eventually(func() []string { return out.Lines() }).Should(HaveLen(26))
		var loss map[string]any
		Expect(json.Unmarshal([]byte(out.Lines()[0]), &loss)).To(Succeed())
		Expect(loss).To(HaveKeyWithValue("message", "3 events lost"))
		var first map[string]any
		Expect(json.Unmarshal([]byte(out.Lines()[1]), &first)).To(Succeed())
		Expect(first).To(HaveKeyWithValue("firewall", "fw-1"))
		Expect(first).To(HaveKeyWithValue("destinationPort", BeNumerically("==", 1000)))
		Expect(first).To(HaveKeyWithValue("context", "drop forward default-deny"))
	})

	DescribeTable("sends nothing, not even the token, to a receiver it cannot verify; the batch counts as lost",
		func(ctx SpecContext, impostor func() (tls.Certificate, []byte)) {
			var requests atomic.Int32
			fake, bundle := impostor()
			other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				requests.Add(1)
				w.WriteHeader(http.StatusNoContent)
			}))
			other.TLS = &tls.Config{Certificates: []tls.Certificate{fake}}
			other.StartTLS()
			DeferCleanup(other.Close)
			q.Push(droplog.Event{Action: "drop"})
			s := send()
			s.Endpoint = func(context.Context) (string, error) { return other.URL + droplog.EventsPath, nil }
			if bundle != nil {
				s.Verifier.Load = func(context.Context) ([]byte, error) { return bundle, nil }
			}
			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			go s.Run(runCtx)
			Eventually(func() uint64 { rec.mu.Lock(); defer rec.mu.Unlock(); return rec.lost[droplog.LostSend] }).Should(BeEquivalentTo(1))
			Expect(requests.Load()).To(BeZero())
		},
		Entry("a certificate of another CA for the receiver's name", func() (tls.Certificate, []byte) {
			_, c := receiverCertificate(droplog.ServerName)
			return c, nil
		}),
		Entry("a certificate of the CA for another name", func() (tls.Certificate, []byte) {
			ca, c := receiverCertificate("kubernetes.default.svc")
			return c, ca
		}),
		Entry("a self-signed one, as a receiver run by hand has", func() (tls.Certificate, []byte) {
			c, err := droplog.SelfSignedCertificate()
			Expect(err).NotTo(HaveOccurred())
			return c, nil
		}),
		Entry("no CA bundle to verify with", func() (tls.Certificate, []byte) {
			return cert, []byte("no PEM here")
		}),
	)

	It("refuses another user's token; the batch counts as lost and the next one says so", func(ctx SpecContext) {
		token = "other-token"
		for range 4 {
			q.Push(droplog.Event{Action: "drop"})
		}
		s := send()
		runCtx, cancel := context.WithCancel(ctx)
		go s.Run(runCtx)
		Eventually(func() int { rec.mu.Lock(); defer rec.mu.Unlock(); return rec.failed }).Should(BeNumerically(">=", 1))
		cancel()
		Expect(out.Lines()).To(Equal([]string{""}))
		Expect(rec.lost).To(HaveKeyWithValue(droplog.LostSend, uint64(4)))

		token = "agent-token"
		q.Push(droplog.Event{Action: "drop"})
		runCtx, cancel = context.WithCancel(ctx)
		defer cancel()
		go s.Run(runCtx)
		Eventually(func() []string { return out.Lines() }).Should(HaveLen(2))
		Expect(out.Lines()[0]).To(ContainSubstring(`"4 events lost"`))
	})
})
