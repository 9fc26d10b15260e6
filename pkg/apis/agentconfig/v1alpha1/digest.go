package v1alpha1

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"sigs.k8s.io/yaml"
)

// DigestPrefix starts the first line of a config the extension generates:
// the SHA-256 of everything after that line. A file cut short (at a line
// boundary it would still decode, with rules missing) or changed no longer
// matches, and the agent refuses it. A config without the line (one a
// firewall admin writes) is taken as it is.
const DigestPrefix = "# sha256:"

// Marshal encodes the config with its digest line first.
func Marshal(cfg *Config) ([]byte, error) {
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	return append([]byte(DigestPrefix+hex.EncodeToString(sum[:])+"\n"), data...), nil
}

// CheckDigest returns an error when data starts with a digest line that
// does not match the rest; nil when it matches or there is none.
func CheckDigest(data []byte) error {
	if !bytes.HasPrefix(data, []byte(DigestPrefix)) {
		return nil
	}
	line, rest, ok := bytes.Cut(data, []byte("\n"))
	want := string(line[len(DigestPrefix):])
	if len(want) > 2*sha256.Size {
		want = want[:2*sha256.Size] + "..."
	}
	sum := sha256.Sum256(rest)
	if got := hex.EncodeToString(sum[:]); !ok || got != want {
		return fmt.Errorf("the digest in its first line (sha256:%s) does not match its content (sha256:%s): the file was cut short or changed", want, got)
	}
	return nil
}
