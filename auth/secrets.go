package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The server's own secrets: the key files of DATA (LoadOrCreateSecret)
// and the box that seals the secrets the store keeps (SecretBox).

// LoadOrCreateSecret reads a base64 secret from path, creating it with n
// random bytes (mode 0600) when it does not exist. Creation is atomic, so
// several processes starting on one data directory agree on one secret.
func LoadOrCreateSecret(path string, n int) ([]byte, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		key := make([]byte, n)
		_, _ = rand.Read(key)
		if err := createOnce(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n")); err != nil {
			return nil, err
		}
	}
	// Another process may have made it first: its secret counts.
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("secret file %s: want base64 of at least 32 bytes", path)
	}
	return key, nil
}

// createOnce makes the file path (mode 0600) holding data, unless it
// exists. The file appears whole (written aside, then linked into place),
// so another process never reads half of it; of processes making it at
// once, the first wins.
func createOnce(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".new-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err := errors.Join(err, tmp.Close()); err != nil {
		return err
	}
	// os.Link fails if path exists.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}

// randomString returns n random bytes, base64url-encoded, after prefix.
func randomString(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// SecretBox seals small secrets (API-key secrets) with AES-256-GCM under a
// server key, binding each to an id so a sealed value cannot be moved to
// another row.
type SecretBox struct{ aead cipher.AEAD }

// NewSecretBox returns a box for a 32-byte key.
func NewSecretBox(key []byte) (*SecretBox, error) {
	if len(key) < 32 {
		return nil, errors.New("secret box: key must have 32 bytes")
	}
	block, err := aes.NewCipher(key[:32])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &SecretBox{aead: aead}, nil
}

// Seal encrypts secret for id and returns base64(nonce || ciphertext).
func (b *SecretBox) Seal(secret []byte, id string) string {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(secret)+b.aead.Overhead())
	_, _ = rand.Read(nonce)
	return base64.RawStdEncoding.EncodeToString(b.aead.Seal(nonce, nonce, secret, []byte(id)))
}

// Open decrypts a value sealed for id.
func (b *SecretBox) Open(sealed, id string) ([]byte, error) {
	raw, err := base64.RawStdEncoding.DecodeString(sealed)
	if err != nil || len(raw) < b.aead.NonceSize() {
		return nil, errors.New("secret box: malformed sealed value")
	}
	n := b.aead.NonceSize()
	out, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(id))
	if err != nil {
		return nil, errors.New("secret box: cannot open (wrong server key?)")
	}
	return out, nil
}
