{{/* The release's base name: the release name, or <release>-drover. */}}
{{- define "drover.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 53 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 53 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The scheduler's objects: Deployment, ConfigMap, Service, RBAC. */}}
{{- define "drover.scheduler" -}}
{{- printf "%s-scheduler" (include "drover.fullname" .) -}}
{{- end -}}

{{- define "drover.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "drover.scheduler" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "drover.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: scheduler
{{- end -}}

{{- define "drover.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: drover
{{- end -}}

{{- define "drover.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
The scheduler's config: .Values.config with the namespaces, the Lease name
and the listen addresses filled in. profile replaces policy.
*/}}
{{- define "drover.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) -}}
{{- if $cfg.profile -}}
{{- $_ := unset $cfg "policy" -}}
{{- else -}}
{{- $_ := unset $cfg "profile" -}}
{{- end -}}
{{- if not $cfg.placeholderNamespace -}}
{{- $_ := set $cfg "placeholderNamespace" .Release.Namespace -}}
{{- end -}}
{{- if not $cfg.leaderElectionNamespace -}}
{{- $_ := set $cfg "leaderElectionNamespace" .Release.Namespace -}}
{{- end -}}
{{- if not $cfg.leaderElectionID -}}
{{- $_ := set $cfg "leaderElectionID" (include "drover.scheduler" .) -}}
{{- end -}}
{{- $_ := set $cfg "metricsAddr" (printf ":%v" .Values.metrics.port) -}}
{{- $_ := set $cfg "healthAddr" (printf ":%v" .Values.health.port) -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/*
The scheduler's writes where TrainingJobs run (rbac.yaml): cluster-wide, or
in config.namespaces only. Pods are read cluster-wide by the scheduler's
ClusterRole; here they are created, bound, patched and deleted.
*/}}
{{- define "drover.tenantRules" }}
- apiGroups: ["drover.dev"]
  resources: ["trainingjobs"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["drover.dev"]
  resources: ["trainingjobs/status"]
  verbs: ["get", "update", "patch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["create", "delete", "patch"]
- apiGroups: [""]
  resources: ["pods/binding"]
  verbs: ["create"]
- apiGroups: [""]
  resources: ["pods/status"]         # PodScheduled=False on waiting pods
  verbs: ["patch", "update"]
- apiGroups: ["scheduling.x-k8s.io"]
  resources: ["podgroups"]           # gangs from PodGroups (Kubeflow --gang-scheduler-name)
  verbs: ["get", "list", "watch", "update", "patch"]
- apiGroups: ["scheduling.x-k8s.io"]
  resources: ["podgroups/status"]
  verbs: ["get", "update", "patch"]
- apiGroups: [""]
  resources: ["resourcequotas"]      # admission against namespace quota (read only)
  verbs: ["get", "list", "watch"]
- apiGroups: ["", "events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch", "update"]
{{- end }}
