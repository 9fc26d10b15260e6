package droplog

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// SelfSignedCertificate is a serving certificate made at start and kept in
// memory only, for a receiver run by hand: agents verify the receiver
// against the extension's CA and refuse it.
func SelfSignedCertificate() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: ReceiverName},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{ReceiverName},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// Serve serves the receiver over TLS on l until ctx is done, with the
// certificate getCert gives for each handshake (CertificateFiles reads a
// rotated one); a self-signed one, which no agent takes, when nil.
func Serve(ctx context.Context, l net.Listener, r *Receiver, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) error {
	if getCert == nil {
		cert, err := SelfSignedCertificate()
		if err != nil {
			return err
		}
		getCert = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	server := &http.Server{
		Handler:           r,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		TLSConfig:         &tls.Config{GetCertificate: getCert, MinVersion: tls.VersionTLS12},
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	if err := server.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// CertificateFiles serves tls.crt and tls.key of dir, read at each
// handshake and taken again when their content changed (the extension
// rotates them in the mounted Secret). Not by the files' modification time:
// the kernel stamps it from a clock that moves once a tick, so a rotation
// within the tick of the last read would keep the old pair. Files that
// cannot be read or do not make a pair while one is served leave that one
// in place, as a rotation seen half way would.
func CertificateFiles(dir string) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	var (
		mu              sync.Mutex
		cert            *tls.Certificate
		certPEM, keyPEM []byte
	)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		mu.Lock()
		defer mu.Unlock()
		c, errCert := os.ReadFile(certFile)
		k, errKey := os.ReadFile(keyFile)
		if err := errors.Join(errCert, errKey); err != nil {
			if cert != nil {
				return cert, nil
			}
			return nil, err
		}
		if cert != nil && bytes.Equal(c, certPEM) && bytes.Equal(k, keyPEM) {
			return cert, nil
		}
		pair, err := tls.X509KeyPair(c, k)
		if err != nil {
			if cert != nil {
				return cert, nil
			}
			return nil, fmt.Errorf("%s and %s: %w", certFile, keyFile, err)
		}
		cert, certPEM, keyPEM = &pair, c, k
		return cert, nil
	}
}
