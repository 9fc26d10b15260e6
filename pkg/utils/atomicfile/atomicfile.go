// Package atomicfile replaces files so that a reader, a crash or a kill in
// the middle never sees a partial or missing file: the agent's credentials,
// its last good ruleset and its update state all depend on that.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces the file at path with data and the given mode. It writes a
// temporary file beside path, syncs it, renames it over path and syncs the
// folder, so after a crash path holds the old or the new content, never a
// mix. A missing folder is created readable by its owner only. Temporary
// files a killed writer left for the same path are removed first: one writer
// per path at a time.
func Write(path string, data []byte, mode os.FileMode) error {
	dir, prefix := filepath.Dir(path), "."+filepath.Base(path)+"-"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	stale, _ := filepath.Glob(filepath.Join(dir, prefix+"*"))
	for _, f := range stale {
		_ = os.Remove(f)
	}
	tmp, err := os.CreateTemp(dir, prefix+"*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := fill(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// fill sets the mode before the content is written, so a secret is never
// readable by others, not even for a moment, and closes the file.
func fill(f *os.File, data []byte, mode os.FileMode) error {
	err := f.Chmod(mode)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncDir makes the renames in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir) //nolint:gosec // a folder this program writes to
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	return d.Sync()
}
