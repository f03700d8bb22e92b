// The fields of a service's configuration, shared by create and edit (the contract's
// create and PATCH take the same fields): each with the default the API applies when it is
// empty, and the API's 400 under the field it names.
import type { ComponentChildren } from 'preact';
import { ErrorNote, Field, fieldOf } from '../ui.tsx';

export const INSTANCE_TYPES = ['svc.nano', 'svc.micro', 'svc.small', 'svc.medium', 'svc.large', 'svc.xlarge'] as const;

export type Form = Record<
  | 'name'
  | 'service_type'
  | 'instance_type'
  | 'deployment_mode'
  | 'image'
  | 'port'
  | 'health_check_path'
  | 'min_replicas'
  | 'max_replicas'
  | 'cron_schedule'
  | 'disk_size_gb'
  | 'disk_mount_path'
  | 'command'
  | 'args'
  | 'run_as_user'
  | 'idle_timeout_seconds'
  | 'target_concurrency',
  string
>;

export const EMPTY: Form = {
  name: '',
  service_type: 'web',
  instance_type: 'svc.nano',
  deployment_mode: 'always_on',
  image: '',
  port: '',
  health_check_path: '',
  min_replicas: '',
  max_replicas: '',
  cron_schedule: '',
  disk_size_gb: '',
  disk_mount_path: '',
  command: '',
  args: '',
  run_as_user: '',
  idle_timeout_seconds: '',
  target_concurrency: '',
};

/** A number field as typed: empty is "the default"; anything else goes as typed, for the API to judge. */
export const num = (v: string): number | undefined => (v.trim() === '' ? undefined : Number(v.trim()));
export const text = (v: string): string | undefined => (v.trim() === '' ? undefined : v.trim());
/** One argument per line: arguments may hold spaces, so no shell-style splitting. */
export const lines = (v: string): string[] | undefined => {
  const l = v.split('\n').filter((x) => x.trim() !== '');
  return l.length ? l : undefined;
};

/** Whether the form shows this field now (some belong to one type or mode only). */
function shown(f: Form, field: string | undefined): boolean {
  if (!field || !(field in EMPTY)) return false;
  if (field === 'cron_schedule') return f.service_type === 'cron';
  if (field === 'target_concurrency') return f.service_type === 'web';
  if (field === 'idle_timeout_seconds') return f.deployment_mode === 'on_demand';
  return true;
}

/** How each field's text becomes the API's value (undefined: empty, the API's default). */
export const PARSERS: Record<keyof Form, (v: string) => string | number | string[] | undefined> = {
  name: (v) => v.trim(),
  service_type: text,
  instance_type: text,
  deployment_mode: text,
  image: text,
  port: num,
  health_check_path: text,
  min_replicas: num,
  max_replicas: num,
  cron_schedule: text,
  disk_size_gb: num,
  disk_mount_path: text,
  command: lines,
  args: lines,
  run_as_user: num,
  idle_timeout_seconds: num,
  target_concurrency: num,
};

export const FORM_KEYS = Object.keys(EMPTY) as (keyof Form)[];

/**
 * The configuration form: the fields (`f`, changed through `onChange`), the API's error
 * `err` under the field it names or above the button when it names none on screen.
 */
export function ServiceForm(props: {
  f: Form;
  onChange: (f: Form) => void;
  err: unknown;
  intro: ComponentChildren;
  submit: string;
  pending: string | false;
  onSubmit: () => void;
  /** Editing: the name is shown but cannot change (the API refuses a new one). */
  nameFixed?: boolean;
}) {
  const { f, err } = props;
  const set = (k: keyof Form) => (e: { currentTarget: { value: string } }) => props.onChange({ ...f, [k]: e.currentTarget.value });
  const web = f.service_type === 'web';
  const onDemand = f.deployment_mode === 'on_demand';
  const input =
    (k: keyof Form, extra: Record<string, unknown> = {}) =>
    (a11y: Record<string, unknown>) => <input {...a11y} {...extra} value={f[k]} onInput={set(k)} />;
  return (
    <form
      class="panel create-form"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        props.onSubmit();
      }}
    >
      <p class="muted">{props.intro}</p>
      <Field
        name="name"
        label="Name"
        error={err}
        hint={
          props.nameFixed
            ? 'A service keeps its name: other services reach it by that name.'
            : 'Lowercase letters, digits and hyphens; starts with a letter; unique in the VPC.'
        }
      >
        {input('name', { required: true, readOnly: props.nameFixed, autoComplete: 'off', spellcheck: false })}
      </Field>
      <div class="grid">
        <Field name="service_type" label="Type" error={err} hint="Default: web (served at a URL); a worker runs without one; cron runs on a schedule.">
          {(a) => (
            <select {...a} value={f.service_type} onChange={set('service_type')}>
              <option value="web">web</option>
              <option value="worker">worker</option>
              <option value="cron">cron</option>
            </select>
          )}
        </Field>
        <Field name="instance_type" label="Instance type" error={err} hint="Default: svc.nano.">
          {(a) => (
            <select {...a} value={f.instance_type} onChange={set('instance_type')}>
              {INSTANCE_TYPES.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field name="deployment_mode" label="Deployment mode" error={err} hint="Default: always_on; on_demand sleeps (scales to zero) when idle.">
          {(a) => (
            <select {...a} value={f.deployment_mode} onChange={set('deployment_mode')}>
              <option value="always_on">always_on</option>
              <option value="on_demand">on_demand</option>
            </select>
          )}
        </Field>
      </div>
      <Field name="image" label="Image" error={err} hint="The image to run, e.g. registry/repository:tag. Without one, deploy or build later.">
        {input('image', { autoComplete: 'off', spellcheck: false, class: 'wide' })}
      </Field>
      {f.service_type === 'cron' && (
        <Field name="cron_schedule" label="Cron schedule" error={err} hint="Required for cron services, e.g. */5 * * * * (UTC).">
          {input('cron_schedule', { required: true, spellcheck: false })}
        </Field>
      )}
      <div class="grid">
        <Field name="port" label="Port" error={err} hint={web ? 'Default: 8080.' : 'Default: none.'}>
          {input('port', { inputMode: 'numeric', placeholder: web ? '8080' : '' })}
        </Field>
        <Field name="health_check_path" label="Health check path" error={err} hint="Default: none (ready once started).">
          {input('health_check_path', { placeholder: '/healthz', spellcheck: false })}
        </Field>
        <Field name="min_replicas" label="Minimum replicas" error={err} hint={`Default: ${onDemand ? 0 : 1}.`}>
          {input('min_replicas', { inputMode: 'numeric', placeholder: onDemand ? '0' : '1' })}
        </Field>
        <Field name="max_replicas" label="Maximum replicas" error={err} hint="Default: none (no autoscaling above the minimum).">
          {input('max_replicas', { inputMode: 'numeric' })}
        </Field>
        {web && (
          <Field
            name="target_concurrency"
            label="Target concurrency"
            error={err}
            hint="Requests in flight per replica the autoscaler aims at. Default: the API's."
          >
            {input('target_concurrency', { inputMode: 'numeric' })}
          </Field>
        )}
        {onDemand && (
          <Field name="idle_timeout_seconds" label="Idle timeout (seconds)" error={err} hint="Seconds without a request before it sleeps. Default: the API's.">
            {input('idle_timeout_seconds', { inputMode: 'numeric' })}
          </Field>
        )}
        <Field name="disk_size_gb" label="Disk size (GB)" error={err} hint="Default: no persistent disk.">
          {input('disk_size_gb', { inputMode: 'numeric' })}
        </Field>
        <Field name="disk_mount_path" label="Disk mount path" error={err} hint="Where the disk is mounted, e.g. /data.">
          {input('disk_mount_path', { spellcheck: false })}
        </Field>
        <Field name="run_as_user" label="Run as user (UID)" error={err} hint="Default: 1000.">
          {input('run_as_user', { inputMode: 'numeric', placeholder: '1000' })}
        </Field>
      </div>
      <div class="grid">
        <Field name="command" label="Command" error={err} hint="Overrides the image's entrypoint: one argument per line. Default: the image's.">
          {(a) => <textarea {...a} rows={3} spellcheck={false} value={f.command} onInput={set('command')} />}
        </Field>
        <Field name="args" label="Arguments" error={err} hint="Overrides the image's arguments: one per line. Default: the image's.">
          {(a) => <textarea {...a} rows={3} spellcheck={false} value={f.args} onInput={set('args')} />}
        </Field>
      </div>
      {/* An error the API pins on no field shown here (or on none) shows here. */}
      <ErrorNote error={err && !shown(f, fieldOf(err)) ? err : undefined} />
      <button type="submit" class="primary" disabled={props.pending !== false}>
        {props.pending || props.submit}
      </button>
    </form>
  );
}
