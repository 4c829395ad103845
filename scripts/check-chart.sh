#!/usr/bin/env bash
# check-chart.sh validates the Helm chart and the deploy/ manifests against a
# real kube-apiserver, offline:
#   1. helm lint --strict, with the default values and each ci/*-values.yaml;
#      values the chart must refuse (an even etcd member count) are refused;
#   2. starts a test API server (envtest: kube-apiserver + etcd) with the
#      CRDs from deploy/crds installed;
#   3. renders the chart with each of those value sets and applies the result
#      with `kubectl apply --server-side --dry-run=server --validate=strict` (schemas,
#      unknown fields, CEL rules, admission) and `helm install
#      --dry-run=server`;
#      Every Sluice container's args are then parsed by the real `sluice`
#      binary (`sluice <args> --help`), so the chart cannot drift from the
#      command's flags;
#   4. applies deploy/crds, deploy/rbac and deploy/samples the same way, then
#      creates the samples for real and lists them (printer columns).
# Nothing runs pods: the test API server has no scheduler or kubelet.
# The tools come from scripts/k8s-tools.sh (built once, then cached).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CHART=charts/sluice

eval "$(scripts/k8s-tools.sh envtest helm)"
helm=$SLUICE_HELM

step() { printf '\n== %s\n' "$*" >&2; }

work=$(mktemp -d)
apiserver_pid=""
cleanup() {
	if [[ -n $apiserver_pid ]]; then
		kill "$apiserver_pid" 2>/dev/null || true
		wait "$apiserver_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

values_sets=("")
for f in "$CHART"/ci/*-values.yaml; do
	values_sets+=("$f")
done

step "helm lint --strict"
for v in "${values_sets[@]}"; do
	"$helm" lint --strict "$CHART" ${v:+--values "$v"}
done

step "values the chart refuses"
# refused VALUES... MESSAGE: helm template must fail, saying MESSAGE.
refused() {
	local msg=${*: -1} out
	if out=$("$helm" template sluice "$CHART" "${@:1:$#-1}" 2>&1); then
		echo "check-chart: the chart accepted ${*:1:$#-1}" >&2
		exit 1
	fi
	if [[ $out != *"$msg"* ]]; then
		printf 'check-chart: %s refused, but not saying %q:\n%s\n' "${*:1:$#-1}" "$msg" "$out" >&2
		exit 1
	fi
	out=${out#*execution error at }
	echo "   refused ${*:1:$#-1}: ${out%%$'\n'*}" >&2
}
refused --set etcd.replicas=2 "etcd.replicas must be odd (1, 3, 5, ...), not 2"
refused --set etcd.replicas=4 "etcd.replicas must be odd (1, 3, 5, ...), not 4"

step "the ServiceMonitor only where its CRDs are; the dashboard is valid JSON"
# The test API server has no Prometheus Operator CRDs: a ServiceMonitor is
# rendered only when helm is told the API exists (as it is in a cluster
# that has them), and then checked for what Prometheus needs to scrape.
if "$helm" template sluice "$CHART" | grep -q '^kind: ServiceMonitor'; then
	echo "check-chart: a ServiceMonitor was rendered without the monitoring.coreos.com/v1 API" >&2
	exit 1
fi
sm=$("$helm" template sluice "$CHART" --api-versions monitoring.coreos.com/v1 --show-only templates/monitoring.yaml)
for want in 'kind: ServiceMonitor' 'app.kubernetes.io/component: metrics' '- port: metrics' 'path: /metrics'; do
	if [[ $sm != *"$want"* ]]; then
		printf 'check-chart: the ServiceMonitor lacks %q:\n%s\n' "$want" "$sm" >&2
		exit 1
	fi
done
if "$helm" template sluice "$CHART" --api-versions monitoring.coreos.com/v1 --set metrics.serviceMonitor.enabled=false | grep -q '^kind: ServiceMonitor'; then
	echo "check-chart: metrics.serviceMonitor.enabled=false still made a ServiceMonitor" >&2
	exit 1
fi
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["panels"], "no panels"' "$CHART/dashboards/sluice.json"
echo "   ServiceMonitor rendered only with monitoring.coreos.com/v1; dashboards/sluice.json parses" >&2

step "building the test API server and sluice"
go build -o "$work/apiserver" ./operator/crdtest/apiserver
go build -o "$work/sluice" ./cmd/sluice

step "starting the test API server"
"$work/apiserver" --write-kubeconfig "$work/kubeconfig" >"$work/apiserver.log" 2>&1 &
apiserver_pid=$!
for ((i = 0; i < 120; i++)); do
	[[ -f $work/kubeconfig ]] && break
	if ! kill -0 "$apiserver_pid" 2>/dev/null; then
		cat "$work/apiserver.log" >&2
		echo "check-chart: the test API server exited" >&2
		exit 1
	fi
	sleep 0.5
done
if [[ ! -f $work/kubeconfig ]]; then
	cat "$work/apiserver.log" >&2
	echo "check-chart: the test API server did not start in 60s" >&2
	exit 1
fi
export KUBECONFIG=$work/kubeconfig
kubectl() { "$SLUICE_KUBECTL" "$@"; }
dry_apply() { kubectl apply --server-side --dry-run=server --validate=strict "$@"; }

# check_args FILE: runs `sluice <args> --help` for every container of FILE
# that runs the sluice image (not etcd), which fails on an unknown flag or a
# malformed value without starting anything.
check_args() {
	local line image args
	# One line per container: image, then the args, tab-separated.
	local tmpl='{{define "c"}}{{range .}}{{.image}}{{"\t"}}{{range .args}}{{.}}{{"\t"}}{{end}}{{"\n"}}{{end}}{{end}}'
	tmpl+='{{with .spec}}{{with .template}}{{template "c" .spec.containers}}{{end}}{{with .containers}}{{template "c" .}}{{end}}{{end}}'
	kubectl create --dry-run=client -f "$1" -o go-template="$tmpl" |
		while IFS= read -r line; do
			IFS=$'\t' read -r -a args <<<"$line"
			image=${args[0]}
			args=("${args[@]:1}")
			[[ $image == *etcd* ]] && continue
			echo "   sluice ${args[*]}" >&2
			if ! "$work/sluice" "${args[@]}" --help >/dev/null; then
				echo "check-chart: the chart passes flags that sluice ${args[0]} does not take" >&2
				return 1
			fi
		done
}

step "chart: render and apply (server dry-run)"
for v in "${values_sets[@]}"; do
	name=${v:-default}
	name=$(basename "$name" -values.yaml)
	ns=check-$name
	kubectl create namespace "$ns" >/dev/null
	out=$work/$name.yaml
	"$helm" template sluice "$CHART" --namespace "$ns" --include-crds ${v:+--values "$v"} >"$out"
	echo "-- $name: $(grep -c '^kind:' "$out") objects" >&2
	dry_apply --namespace "$ns" -f "$out"
	check_args "$out"
	"$helm" install sluice "$CHART" --namespace "$ns" --dry-run=server ${v:+--values "$v"} >/dev/null
done

step "deploy/: CRDs, RBAC, samples (server dry-run)"
dry_apply -f deploy/crds
# The RBAC objects live in sluice-system; a dry run does not create the
# namespace, so create it for real first.
kubectl create namespace sluice-system >/dev/null
dry_apply -f deploy/rbac
kubectl create namespace samples >/dev/null
dry_apply --namespace samples -f deploy/samples

step "deploy/samples: create and list"
kubectl apply --server-side --namespace samples -f deploy/samples
kubectl get --namespace samples sluice -o wide

echo "check-chart: OK" >&2
