// The test cluster's cert-manager controller: cert-manager's own controllers (the module's
// pkg/), started by this small main because the module proxy serves the module without its
// cmd/ directory (a nested module it does not publish). Only what an ACME ClusterIssuer with
// HTTP-01 needs runs: issuers, certificates, certificate requests (approved here, as with no
// approval policy installed), orders and challenges. build-addons.sh builds it inside a copy
// of the module, so every dependency is the version cert-manager pins.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	_ "github.com/cert-manager/cert-manager/pkg/controller/acmechallenges"
	_ "github.com/cert-manager/cert-manager/pkg/controller/acmeorders"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/acme"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/acme"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	namespace := flag.String("cluster-resource-namespace", "cert-manager", "where the ClusterIssuers' Secrets (ACME account keys) live")
	solverImage := flag.String("acme-http01-solver-image", "", "image of the HTTP-01 solver pods")
	nameservers := flag.String("acme-http01-solver-nameservers", "", "host:port list (comma-separated) the HTTP-01 self-check resolves names with")
	klog.InitFlags(nil)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "controller")
	log := logf.FromContext(ctx)

	var servers []string
	if *nameservers != "" {
		servers = strings.Split(*nameservers, ",")
	}
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         *kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: *namespace},
		ACMEOptions: controller.ACMEOptions{
			HTTP01SolverImage:                 *solverImage,
			HTTP01SolverResourceRequestCPU:    resource.MustParse("10m"),
			HTTP01SolverResourceRequestMemory: resource.MustParse("16Mi"),
			HTTP01SolverResourceLimitsCPU:     resource.MustParse("100m"),
			HTTP01SolverResourceLimitsMemory:  resource.MustParse("64Mi"),
			ACMEHTTP01SolverRunAsNonRoot:      true,
			HTTP01SolverNameservers:           servers,
			DNS01Nameservers:                  servers,
			DNS01CheckRetryPeriod:             10 * time.Second,
		},
		CertificateOptions: controller.CertificateOptions{
			// A test's failed request is retried within seconds, not cert-manager's hour.
			CertificateRequestMinimumBackoffDuration: 5 * time.Second,
			CertificateRequestMaximumBackoffDuration: time.Minute,
		},
		SchedulerOptions: controller.SchedulerOptions{MaxConcurrentChallenges: 60},
	})
	if err != nil {
		log.Error(err, "building the controller context")
		os.Exit(1)
	}

	var wg sync.WaitGroup
	for name, construct := range controller.Known() {
		c, err := construct(factory)
		if err != nil {
			log.Error(err, "starting controller", "controller", name)
			os.Exit(1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Run(2, ctx); err != nil {
				log.Error(err, "controller stopped", "controller", name)
				os.Exit(1)
			}
		}()
	}
	// Every Context the factory builds shares these informer factories: start them once the
	// controllers have asked for their informers.
	shared, err := factory.Build()
	if err != nil {
		log.Error(err, "building the informers' context")
		os.Exit(1)
	}
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	log.Info("cert-manager controllers running", "count", len(controller.Known()))
	wg.Wait()
}
