package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/yard-api/yard/conform"
)

// runConform is "yard conform [flags] URL": the conformance kit
// (docs/conformance.md) against the server at URL. Its exit status is 0
// when every MUST check passed, 1 when one failed, 2 for bad arguments or
// a server it cannot reach or sign in to.
func runConform(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("conform", stderr)
	admin := fs.String("admin", "admin", "the administrator the kit signs in as; its password is read from standard input, or from YARD_ADMIN_PASSWORD")
	caFile := fs.String("ca", "", "trust the CA certificates in this PEM file (a self-signed server's cert.pem)")
	insecure := fs.Bool("insecure", false, "do not verify the server's certificate")
	var only, skip listFlag
	fs.Var(&only, "only", "run only these parts (comma-separated): "+strings.Join(conform.Parts(), ", "))
	fs.Var(&skip, "skip", "leave out these checks (comma-separated ids)")
	junit := fs.String("junit", "", "also write the result as JUnit XML to this file")
	asJSON := fs.Bool("json", false, "write the result as JSON on standard output (the report for people goes to standard error)")
	timeout := fs.Duration("timeout", 2*time.Minute, "time limit of the whole run (clean-up comes after it)")
	receiver := fs.String("receiver", "127.0.0.1:0", "loopback address of the kit's webhook receiver")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError("conform: the server's URL is needed (yard conform [flags] URL)")
	}
	if err := noMoreArgs(fs, fs.Args()[1:]); err != nil {
		return err
	}
	if *caFile != "" && *insecure {
		return usageError("conform: --ca and --insecure exclude each other")
	}
	if *timeout <= 0 {
		return usageError("conform: --timeout must be positive")
	}
	hc, err := conformClient(*caFile, *insecure)
	if err != nil {
		return err
	}
	password := getenv("YARD_ADMIN_PASSWORD")
	if password == "" && stdin != nil {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("conform: reading the password: %w", err)
		}
		password = strings.TrimRight(line, "\r\n")
	}
	if password == "" {
		return usageError("conform: the administrator's password is needed, on standard input or in YARD_ADMIN_PASSWORD")
	}
	rep, err := conform.Run(ctx, conform.Config{URL: fs.Arg(0), Admin: *admin, AdminPassword: password, Client: hc,
		Only: only, Skip: skip, Timeout: *timeout, ReceiverAddr: *receiver})
	if err != nil {
		if errors.Is(err, conform.ErrSetup) {
			return usageError(err.Error())
		}
		return err
	}
	text := stdout
	if *asJSON {
		text = stderr
		if err := rep.WriteJSON(stdout); err != nil {
			return err
		}
	}
	if err := rep.WriteText(text); err != nil {
		return err
	}
	if *junit != "" {
		if err := writeJUnit(*junit, rep); err != nil {
			return err
		}
	}
	if rep.TimedOut {
		return errors.New("conform: the run timed out (--timeout) before every check ran")
	}
	if rep.MustFailed() {
		return errors.New("conform: a MUST check failed")
	}
	return nil
}

func conformClient(caFile string, insecure bool) (*http.Client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case insecure:
		cfg.InsecureSkipVerify = true
	case caFile != "":
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, usageError(fmt.Sprintf("conform: --ca: %v", err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageError(fmt.Sprintf("conform: --ca %s: no PEM certificate in it", caFile))
		}
		cfg.RootCAs = pool
	}
	return &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 8}}, nil
}

func writeJUnit(path string, rep *conform.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("conform: --junit: %w", err)
	}
	if err := rep.WriteJUnit(f); err != nil {
		f.Close()
		return fmt.Errorf("conform: --junit: %w", err)
	}
	return f.Close()
}
