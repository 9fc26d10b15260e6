// Package seal encrypts a short secret to one firewall agent's identity key
// so that only that machine can read it: the new seed's bootstrap credential
// after a control plane migration travels through the shoot, where the
// shoot's admins can read every Secret.
//
// The scheme is HPKE (RFC 9180) base mode from the standard library:
// DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, with the agent's
// ECDSA P-256 identity key (the key of its client certificate, pinned by the
// seed's CSR approver) used for the key agreement. The info string binds a
// sealed box to the firewall it is for, so a box for firewall A cannot be
// replayed to firewall B even if both had the same key.
package seal

import (
	"crypto/ecdsa"
	"crypto/hpke"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// Version is the envelope's format version.
const Version = "hpke-p256-sha256-aes256gcm/v1"

// maxEnvelope bounds what Open reads: a bootstrap kubeconfig is a few KiB.
const maxEnvelope = 64 << 10

// Envelope is what is stored: the sealed box and what it was sealed to.
type Envelope struct {
	// Version names the scheme.
	Version string `json:"version"`
	// KeyID is the SHA-256 of the recipient's public key (KeyID), so that an
	// agent holding another key says why it cannot open the box.
	KeyID string `json:"keyID"`
	// Sealed is HPKE's encapsulated key followed by the ciphertext.
	Sealed []byte `json:"sealed"`
}

func suite() (hpke.KDF, hpke.AEAD) { return hpke.HKDFSHA256(), hpke.AES256GCM() }

func info(namespace, name string) []byte {
	return []byte("gardener-extension-firewall bootstrap " + Version + " " + namespace + "/" + name)
}

// Seal encrypts plaintext to the agent whose public key is the PKIX (SPKI)
// DER publicKeyDER, for the firewall namespace/name. It returns the encoded
// envelope.
func Seal(publicKeyDER []byte, namespace, name string, plaintext []byte) ([]byte, error) {
	pub, err := x509.ParsePKIXPublicKey(publicKeyDER)
	if err != nil {
		return nil, fmt.Errorf("agent key: %w", err)
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("agent key: %T is no ECDSA key", pub)
	}
	ecdhPub, err := ec.ECDH()
	if err != nil {
		return nil, fmt.Errorf("agent key: %w", err)
	}
	hpub, err := hpke.NewDHKEMPublicKey(ecdhPub)
	if err != nil {
		return nil, fmt.Errorf("agent key: %w", err)
	}
	kdf, aead := suite()
	sealed, err := hpke.Seal(hpub, kdf, aead, info(namespace, name), plaintext)
	if err != nil {
		return nil, err
	}
	return json.Marshal(Envelope{Version: Version, KeyID: KeyID(publicKeyDER), Sealed: sealed})
}

// Open decrypts an envelope with the agent's key for the firewall
// namespace/name.
func Open(key *ecdsa.PrivateKey, namespace, name string, envelope []byte) ([]byte, error) {
	if len(envelope) > maxEnvelope {
		return nil, fmt.Errorf("sealed box of %d bytes is larger than %d", len(envelope), maxEnvelope)
	}
	env := Envelope{}
	if err := json.Unmarshal(envelope, &env); err != nil {
		return nil, fmt.Errorf("not a sealed box: %w", err)
	}
	if env.Version != Version {
		return nil, fmt.Errorf("sealed box of version %q, want %q", env.Version, Version)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	if id := KeyID(der); env.KeyID != id {
		return nil, fmt.Errorf("sealed to key %s, this agent holds %s", env.KeyID, id)
	}
	ecdhKey, err := key.ECDH()
	if err != nil {
		return nil, err
	}
	priv, err := hpke.NewDHKEMPrivateKey(ecdhKey)
	if err != nil {
		return nil, err
	}
	kdf, aead := suite()
	plaintext, err := hpke.Open(priv, kdf, aead, info(namespace, name), env.Sealed)
	if err != nil {
		return nil, errors.New("the sealed box does not open with this agent's key for this firewall")
	}
	return plaintext, nil
}

// KeyID names a public key (PKIX DER) by its SHA-256.
func KeyID(publicKeyDER []byte) string {
	sum := sha256.Sum256(publicKeyDER)
	return "sha256:" + base64.RawURLEncoding.EncodeToString(sum[:])
}
