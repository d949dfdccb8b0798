// Package charts holds drover's Helm charts (charts/drover) and their
// tests: helm lint, rendering with default and other values, the rendered
// configs through the scheduler's own parser, a server-side dry run of the
// output and a real `helm install` on the test API server, the Grafana
// dashboard and the staleness of deploy/drover.yaml. helm comes from
// hack/testbin/helm.sh through DROVER_HELM, the API server from
// hack/testbin/build.sh through KUBEBUILDER_ASSETS (`make test` sets both).
package charts
