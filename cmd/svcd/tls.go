package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/svcd/svcd/shared/clustertls"
)

const tlsUsage = `usage: svcd tls ca create [-dir DIR] [-name NAME] [-days N]
       svcd tls cert create -name NODE -san LIST [-ca FILE] [-ca-key FILE] [-dir DIR] [-days N]`

// runTLS is `svcd tls ca create` and `svcd tls cert create`: a cluster CA
// and node certificates for mutual TLS between nodes (docs/ha.md, TLS).
// ECDSA P-256; keys are written 0600 and nothing is ever overwritten.
func runTLS(_ context.Context, args []string) error {
	if len(args) < 2 || args[1] != "create" || (args[0] != "ca" && args[0] != "cert") {
		return errors.New(tlsUsage)
	}
	if args[0] == "ca" {
		return tlsCACreate(args[2:])
	}
	return tlsCertCreate(args[2:])
}

func tlsCACreate(args []string) error {
	fs := flag.NewFlagSet("svcd tls ca create", flag.ContinueOnError)
	dir := fs.String("dir", ".", "directory for ca.pem and ca-key.pem (the key is written 0600)")
	name := fs.String("name", "svcd cluster CA", "the CA's common name")
	days := fs.Int("days", 3650, "validity in days")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 || *days <= 0 {
		return errors.New(tlsUsage)
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	cert, key, err := clustertls.CreateCA(*dir, *name, time.Duration(*days)*24*time.Hour, time.Now())
	if err != nil {
		return err
	}
	return printJSON(map[string]any{"ca_cert": cert, "ca_key": key,
		"next": "keep ca-key.pem off the nodes; copy ca.pem to every node (tls_ca_file) and run svcd tls cert create for each"})
}

func tlsCertCreate(args []string) error {
	fs := flag.NewFlagSet("svcd tls cert create", flag.ContinueOnError)
	dir := fs.String("dir", ".", "directory for NAME.pem and NAME-key.pem (the key is written 0600)")
	name := fs.String("name", "", "the node's name (its node_id, say); names the files")
	san := fs.String("san", "", "comma separated DNS names and IPs peers dial this node at (its raft_advertise host)")
	caCert := fs.String("ca", "ca.pem", "the CA certificate")
	caKey := fs.String("ca-key", "ca-key.pem", "the CA key")
	days := fs.Int("days", 825, "validity in days (at most the CA's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 || *days <= 0 || *name == "" {
		return errors.New(tlsUsage)
	}
	sans, err := clustertls.ParseSANs(*san)
	if err != nil {
		return fmt.Errorf("-san: %w", err)
	}
	ca, err := clustertls.LoadCA(*caCert, *caKey)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	cert, key, err := ca.CreateCert(*dir, *name, sans, time.Duration(*days)*24*time.Hour, time.Now())
	if err != nil {
		return err
	}
	return printJSON(map[string]any{"cert": cert, "key": key, "dns_names": sans.DNS, "ips": sans.IPs,
		"config": map[string]string{"tls_ca_file": *caCert, "tls_cert_file": cert, "tls_key_file": key}})
}
