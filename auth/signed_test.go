package auth

import "testing"

func TestSecretBox(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	b, err := NewSecretBox(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed := b.Seal([]byte("the secret"), "ak_1")
	got, err := b.Open(sealed, "ak_1")
	if err != nil || string(got) != "the secret" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := b.Open(sealed, "ak_2"); err == nil {
		t.Error("a value sealed for one id opened for another")
	}
	other, _ := NewSecretBox([]byte("fedcba9876543210fedcba9876543210"))
	if _, err := other.Open(sealed, "ak_1"); err == nil {
		t.Error("a value opened under another key")
	}
}
