package bootstrap

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/atomicfile"
)

// LoadOrCreateKey returns the agent's identity key from path, generating and
// writing it (0600) on first use. The key never leaves the machine: the seed
// pins its public half on the first certificate, renewals must prove they
// hold it, and a credential delivered through the shoot is sealed to it.
func LoadOrCreateKey(path string) (*ecdsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		return DecodeKey(data)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading the identity key: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	pemData, err := EncodeKey(key)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(path, pemData, 0o600); err != nil {
		return nil, fmt.Errorf("writing the identity key: %w", err)
	}
	return key, nil
}

// EncodeKey returns the key as PEM ("EC PRIVATE KEY").
func EncodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// DecodeKey parses a PEM ECDSA P-256 key.
func DecodeKey(data []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "EC PRIVATE KEY" {
		return nil, errors.New("the identity key file holds no EC PRIVATE KEY")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the identity key: %w", err)
	}
	if key.Curve != elliptic.P256() {
		return nil, errors.New("the identity key is not on P-256")
	}
	return key, nil
}
