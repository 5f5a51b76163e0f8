package auth

import (
	"os"
	"strconv"
)

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o600) }

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
