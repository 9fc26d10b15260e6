// Package selfupdate updates the firewall agent to the version its source
// names: it downloads the binary, refuses it unless its SHA-256 is the one
// the source (a trusted place: the seed, the local config) names and an
// Ed25519 signature of the operator's key covers version and digest, runs
// it on trial from beside the installed binary, installs it (atomically,
// keeping the previous one) once it applied the ruleset, and rolls back
// when it does not within the health timeout. The nftables table stays in
// the kernel throughout: no agent flushes it on exit.
package selfupdate

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Release is an agent version to run, as the agent's source names it.
type Release struct {
	Version string
	URL     string
	// SHA256 is the binary's digest in lowercase hex.
	SHA256 string
}

// SignedMessage is what a release's signature covers. It binds the version
// to the digest: a validly signed old binary cannot be offered under a newer
// version (which would defeat the downgrade check), and the signature is
// checked without holding the binary in memory.
func SignedMessage(version, sha256Hex string) []byte {
	return fmt.Appendf(nil, "firewall-agent-release-v1\nversion: %s\nsha256: %s\n", version, sha256Hex)
}

// MaxKeyBytes bounds the public key file.
const MaxKeyBytes = 4 << 10

// LoadPublicKey reads an Ed25519 public key from a PEM file ("PUBLIC KEY",
// PKIX, as `openssl pkey -pubout` writes it).
func LoadPublicKey(path string) (ed25519.PublicKey, error) {
	f, err := os.Open(path) //nolint:gosec // named by the machine's admin
	if err != nil {
		return nil, fmt.Errorf("the update public key: %w", err)
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, MaxKeyBytes+1)
	n, _ := readFull(f, buf)
	if n > MaxKeyBytes {
		return nil, fmt.Errorf("the update public key %s: larger than %d bytes", path, MaxKeyBytes)
	}
	key, err := ParsePublicKey(buf[:n])
	if err != nil {
		return nil, fmt.Errorf("the update public key %s: %w", path, err)
	}
	return key, nil
}

// ParsePublicKey parses a PEM "PUBLIC KEY" holding an Ed25519 key.
func ParsePublicKey(data []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New(`not a PEM "PUBLIC KEY" block`)
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	ed, ok := key.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an Ed25519 key", key)
	}
	return ed, nil
}

// ParseSignature takes the signature file: the 64 raw bytes `openssl pkeyutl
// -sign` writes, or them in base64 (one line).
func ParseSignature(data []byte) ([]byte, error) {
	if len(data) == ed25519.SignatureSize {
		return data, nil
	}
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("the signature is neither %d raw bytes nor their base64 (%d bytes read)", ed25519.SignatureSize, len(data))
	}
	return sig, nil
}

// Verify checks that sig is the key's signature of the release's version
// and digest.
func Verify(key ed25519.PublicKey, version, sha256Hex string, sig []byte) error {
	if !ed25519.Verify(key, SignedMessage(version, sha256Hex), sig) {
		return fmt.Errorf("bad signature: not made by the configured key for version %s with sha256 %s", version, sha256Hex)
	}
	return nil
}
