// Package doctest runs the shell examples of yard's documents (README.md
// and docs/*.md) as tests, so that every example works as written.
//
// A document's fenced blocks with the info string "sh" run in order, in one
// bash process (so a variable one block sets is there in the next), in a
// fresh working directory. The document starts its own server (its first
// block runs ./yard serve in the background). The runner provides only:
//
//   - ./yard and yard on PATH: the binary built from the tree;
//   - a free port: YARD_ADDR is set to 127.0.0.1:PORT and YARD_BASE_URL to
//     https://localhost:8443, and curl's configuration ($HOME/.curlrc)
//     connects localhost:8443 to that port, so the documents' URLs work as
//     written while another server may hold port 8443;
//   - HOME (that directory) and PATH; no other variable.
//
// Expected answers are written in the document as a comment on a curl
// command's last line, or on a comment line right after it:
//
//	curl … -X POST $B/barks -i          # → 201 `Location: https://localhost:8443/v1/dogs/`
//
// The number after "→" is the status of the final response (after the
// redirects curl -L follows, or Digest's challenge); each `backquoted`
// fragment must occur in the response's headers or body (case-insensitive).
// A curl command without such a comment must answer 2xx or 3xx. Blocks run
// under set -e -o pipefail: a failing command fails the document.
//
// A block that needs what the runner cannot provide is marked in its info
// string, "sh skip=REASON" (REASON one of SkipReasons), and is logged as
// skipped with the reason.
package doctest
