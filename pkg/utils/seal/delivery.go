package seal

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// DeliveryVersion is the signed delivery's format version.
const DeliveryVersion = "ecdsa-p256-sha256/v1"

// Delivery is what the seed hands an agent through the shoot: a box sealed to
// the agent's key, signed with the firewall's delivery key. The seal keeps the
// content from the shoot's admins; the signature keeps them from writing a box
// of their own, since the agent's public key is no secret. The delivery key's
// private half lives only in the seed and in the Firewall's migration state.
type Delivery struct {
	// Firewall is namespace/name of the firewall the box is for.
	Firewall string `json:"firewall"`
	// Generation orders deliveries: the agent never takes one twice or an
	// older one. The seed uses the time of sealing (Unix nanoseconds), which
	// also orders deliveries of different seeds after migrations.
	Generation int64 `json:"generation"`
	// Expires is when the credential inside expires.
	Expires time.Time `json:"expires"`
	// Sealed is the envelope of Seal.
	Sealed []byte `json:"sealed"`
}

// signed is the stored form: the signature covers Payload's exact bytes, so
// nothing is re-encoded between signing and verifying.
type signed struct {
	Version   string `json:"version"`
	Payload   []byte `json:"payload"`
	Signature []byte `json:"signature"`
}

// Sign encodes d signed with the delivery key.
func Sign(key *ecdsa.PrivateKey, d Delivery) ([]byte, error) {
	payload, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	digest := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest[:])
	if err != nil {
		return nil, err
	}
	return json.Marshal(signed{Version: DeliveryVersion, Payload: payload, Signature: sig})
}

// Verify checks a signed delivery against the delivery key's public half
// (PKIX DER) and that it is for namespace/name, and returns it.
func Verify(publicKeyDER []byte, namespace, name string, box []byte) (*Delivery, error) {
	if len(box) > maxEnvelope {
		return nil, fmt.Errorf("delivery of %d bytes is larger than %d", len(box), maxEnvelope)
	}
	pub, err := x509.ParsePKIXPublicKey(publicKeyDER)
	if err != nil {
		return nil, fmt.Errorf("delivery key: %w", err)
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("delivery key: %T is no ECDSA key", pub)
	}
	s := signed{}
	if err := json.Unmarshal(box, &s); err != nil {
		return nil, fmt.Errorf("not a signed delivery: %w", err)
	}
	if s.Version != DeliveryVersion {
		return nil, fmt.Errorf("delivery of version %q, want %q", truncate(s.Version), DeliveryVersion)
	}
	digest := sha256.Sum256(s.Payload)
	if !ecdsa.VerifyASN1(ec, digest[:], s.Signature) {
		return nil, errors.New("the delivery is not signed with this firewall's delivery key " + KeyID(publicKeyDER))
	}
	d := &Delivery{}
	if err := json.Unmarshal(s.Payload, d); err != nil {
		return nil, fmt.Errorf("signed delivery: %w", err)
	}
	if want := namespace + "/" + name; d.Firewall != want {
		return nil, fmt.Errorf("the delivery is for firewall %q, not %q", truncate(d.Firewall), want)
	}
	return d, nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
