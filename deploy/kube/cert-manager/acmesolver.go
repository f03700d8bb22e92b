// The HTTP-01 solver pods' program (cert-manager's acmesolver), from the module's pkg/ like
// controller.go: it answers /.well-known/acme-challenge/<token> with the key authorization.
package main

import (
	"flag"
	"os"

	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/issuer/acme/http/solver"
)

func main() {
	s := &solver.HTTP01Solver{}
	flag.IntVar(&s.ListenPort, "listen-port", 8089, "port to listen on")
	flag.StringVar(&s.Domain, "domain", "", "the domain being validated")
	flag.StringVar(&s.Token, "token", "", "the challenge token")
	flag.StringVar(&s.Key, "key", "", "the key authorization to answer")
	flag.Parse()
	if err := s.Listen(logf.Log); err != nil {
		logf.Log.Error(err, "solver stopped")
		os.Exit(1)
	}
}
