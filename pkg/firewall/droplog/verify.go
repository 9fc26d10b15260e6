package droplog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// ServerName is the name the receiver's certificate must carry.
const ServerName = constants.DropReceiverServerName

// caTTL is how long a CA bundle read is used before it is read again: a
// rotated CA reaches the agents within it.
const caTTL = time.Minute

// Verifier verifies the receiver's certificate against the CA bundle the
// extension publishes in the shoot (ConfigMap firewall/firewall-drop-ca):
// the agent sends its batches to a pod address that an EndpointSlice names,
// and only a receiver with a certificate of that CA for ServerName gets
// them and the token.
type Verifier struct {
	// Load reads the PEM bundle.
	Load func(ctx context.Context) ([]byte, error)

	mu    sync.Mutex
	pool  *x509.CertPool
	until time.Time
}

// Refresh reads the bundle when the one held is older than caTTL. A failed
// read keeps the bundle held; without one it is the error.
func (v *Verifier) Refresh(ctx context.Context) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.pool != nil && time.Now().Before(v.until) {
		return nil
	}
	pool, err := v.load(ctx)
	if err != nil {
		if v.pool != nil {
			return nil
		}
		return err
	}
	v.pool, v.until = pool, time.Now().Add(caTTL)
	return nil
}

func (v *Verifier) load(ctx context.Context) (*x509.CertPool, error) {
	bundle, err := v.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("the receiver's CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		return nil, errors.New("the receiver's CA bundle holds no certificate")
	}
	return pool, nil
}

func (v *Verifier) current() *x509.CertPool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.pool
}

// verifyConnection is the TLS handshake's check of the receiver.
func (v *Verifier) verifyConnection(cs tls.ConnectionState) error {
	pool := v.current()
	if pool == nil {
		return errors.New("no CA bundle of the receiver to verify it with")
	}
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the receiver presented no certificate")
	}
	intermediates := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		intermediates.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: intermediates, DNSName: ServerName,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return fmt.Errorf("the receiver's certificate: %w", err)
	}
	return nil
}

// NewHTTPClient is the sender's client: it verifies the receiver with v.
func NewHTTPClient(v *Verifier) *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{
				MinVersion: tls.VersionTLS12,
				// The receiver is reached at a pod address and verified for
				// ServerName against a CA bundle that can change at run time:
				// VerifyConnection does what the default verification would
				// with fixed roots and the dialled host.
				InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
				VerifyConnection:   v.verifyConnection,
			},
			MaxIdleConnsPerHost: 2,
		},
	}
}
