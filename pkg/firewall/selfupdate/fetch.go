package selfupdate

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
)

// MaxSignatureBytes bounds the signature file.
const MaxSignatureBytes = 1 << 10

// fetchVerified downloads the release into a new file at path (0755,
// synced) and returns only when the binary has the release's digest, was
// not cut short and the signature at URL + ".sig" verifies; otherwise the
// file is removed. At most maxBytes are read.
func fetchVerified(ctx context.Context, client *http.Client, rel Release, key ed25519.PublicKey, maxBytes int64, path string) (err error) {
	sigData, err := get(ctx, client, rel.URL+".sig", MaxSignatureBytes, io.Discard)
	if err != nil {
		return fmt.Errorf("the signature: %w", err)
	}
	sig, err := ParseSignature(sigData)
	if err != nil {
		return fmt.Errorf("the signature %s.sig: %w", rel.URL, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o700) //nolint:gosec // beside the agent's own binary
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	h := sha256.New()
	if _, err := get(ctx, client, rel.URL, maxBytes, io.MultiWriter(f, h)); err != nil {
		return fmt.Errorf("the binary: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != rel.SHA256 {
		return fmt.Errorf("wrong checksum: %s has sha256 %s, the source names %s", rel.URL, got, rel.SHA256)
	}
	if err := Verify(key, rel.Version, rel.SHA256, sig); err != nil {
		return err
	}
	if err := f.Chmod(0o755); err != nil {
		return err
	}
	return f.Sync()
}

// get reads url into w, at most limit bytes, and returns the bytes when w
// is io.Discard (small files). A status other than 200, a body longer than
// limit or shorter than its Content-Length is an error.
func get(ctx context.Context, client *http.Client, url string, limit int64, w io.Writer) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("downloading: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("downloading %s: HTTP %s", url, resp.Status)
	}
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("downloading %s: %d bytes, more than the limit of %d", url, resp.ContentLength, limit)
	}
	var small []byte
	if w == io.Discard {
		small = make([]byte, 0, 128)
		w = &appender{&small}
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, limit+1))
	switch {
	case err != nil:
		// A connection cut short shows here (unexpected EOF).
		return nil, fmt.Errorf("downloading %s: truncated after %d bytes: %w", url, n, err)
	case n > limit:
		return nil, fmt.Errorf("downloading %s: more than the limit of %d bytes", url, limit)
	case resp.ContentLength >= 0 && n != resp.ContentLength:
		return nil, fmt.Errorf("downloading %s: truncated: %d of %d bytes", url, n, resp.ContentLength)
	}
	return small, nil
}

type appender struct{ b *[]byte }

func (a *appender) Write(p []byte) (int, error) {
	*a.b = append(*a.b, p...)
	return len(p), nil
}

// readFull reads until buf is full or the reader ends.
func readFull(r io.Reader, buf []byte) (int, error) {
	n, err := io.ReadFull(r, buf)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}
