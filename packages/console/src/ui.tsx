// Small shared pieces: API errors in the API's words, a confirmation dialog, copy buttons.
import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { messageOf, PierApiError } from './api.ts';
import { useMutation, type QueryState } from './data.ts';

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const forbidden = error instanceof PierApiError && error.status === 403;
  return (
    <p class={forbidden ? 'note note-forbidden' : 'note note-error'} role="alert">
      {forbidden ? 'Not allowed: ' : ''}
      {messageOf(error)}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status">
      Loading {what}…
    </p>
  );
}

/** A modal `<dialog>`: the browser traps focus in it and Escape cancels it. */
export function ConfirmDialog(props: {
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  pending?: boolean;
  /** Not yet confirmable (a name still to be typed). */
  confirmDisabled?: boolean;
  error?: unknown;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  // Several dialogs may share a screen (a service's detail has a few, a database's delete and its tab's own).
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.open && !d.open) d.showModal();
    if (!props.open && d.open) d.close();
  }, [props.open]);
  return (
    <dialog
      ref={ref}
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        props.onCancel();
      }}
    >
      <h2 id={titleId}>{props.title}</h2>
      <div>{props.children}</div>
      <ErrorNote error={props.error} />
      <div class="actions">
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" class="danger" disabled={props.pending || props.confirmDisabled} onClick={props.onConfirm}>
          {props.pending ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false; // not a secure context, or permission refused: the text stays selectable
  }
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <button
      type="button"
      onClick={async () => {
        setState((await copyText(text)) ? 'copied' : 'failed');
        setTimeout(() => setState('idle'), 2000);
      }}
    >
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Select and copy it by hand' : label}
    </button>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge badge-${status}`}>{status}</span>;
}

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/**
 * An action behind a confirmation: `ask(item)` opens the dialog (it goes once on the page),
 * which runs `run(item)` when confirmed and stays open with the API's message when it fails.
 */
export function useConfirmed<T>(opts: {
  title: string;
  confirmLabel: string;
  run: (item: T) => Promise<unknown>;
  body: (item: T | null) => ComponentChildren;
  onDone?: (item: T) => void;
}) {
  const [target, setTarget] = useState<T | null>(null);
  const m = useMutation(opts.run);
  const dialog = (
    <ConfirmDialog
      open={target !== null}
      title={opts.title}
      confirmLabel={opts.confirmLabel}
      pending={m.pending}
      error={m.error}
      onCancel={() => {
        m.reset();
        setTarget(null);
      }}
      onConfirm={async () => {
        if (target !== null && (await m.run(target))) {
          opts.onDone?.(target);
          setTarget(null);
        }
      }}
    >
      {opts.body(target)}
    </ConfirmDialog>
  );
  return { ask: setTarget, dialog };
}

/**
 * A removal behind a confirmation: `button(item)` is a row's button, `dialog` goes once on
 * the page and asks "<verb> <noun>?" before `remove` runs.
 */
export function useConfirmedRemoval(opts: { verb: string; noun: string; warning: string; remove: (id: string) => Promise<unknown> }) {
  const { ask, dialog } = useConfirmed<{ id: string; name: string }>({
    title: `${opts.verb} ${opts.noun}?`,
    confirmLabel: `${opts.verb} ${opts.noun}`,
    run: (item) => opts.remove(item.id),
    body: (item) => (
      <p>
        {opts.verb} <strong>{item?.name}</strong>? {opts.warning}
      </p>
    ),
  });
  const button = (item: { id: string; name: string }) => (
    <button type="button" class="danger" aria-label={`${opts.verb} ${opts.noun} ${item.name}`} onClick={() => ask({ id: item.id, name: item.name })}>
      {opts.verb}
    </button>
  );
  return { button, dialog };
}

/**
 * A list screen's body: the API's error, "Loading…", the empty text, or a table whose rows
 * carry `data-<kind>="<name>"` (what tests and scripts find them by). `actions` adds a last
 * column, labelled for screen readers only, for each row's buttons.
 */
export function ListTable<T extends { id: string; name: string }>(props: {
  query: QueryState<{ items: T[] }>;
  kind: string;
  what: string;
  empty: ComponentChildren;
  columns: string[];
  caption?: string;
  actions?: (item: T) => ComponentChildren;
  cells: (item: T) => ComponentChildren;
}) {
  const { query } = props;
  const items = query.data?.items ?? [];
  return (
    <>
      <ErrorNote error={query.error} />
      {query.loading && !query.data ? (
        <Loading what={props.what} />
      ) : query.error && !query.data ? null : items.length === 0 ? (
        <p>{props.empty}</p>
      ) : (
        <TableScroll label={props.caption ?? props.what}>
          <table>
            {props.caption && <caption class="sr-only">{props.caption}</caption>}
            <thead>
              <tr>
                {props.columns.map((c) => (
                  <th scope="col" key={c}>
                    {c}
                  </th>
                ))}
                {props.actions && (
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {items.map((item) => (
                <tr key={item.id} {...{ [`data-${props.kind}`]: item.name }}>
                  {props.cells(item)}
                  {props.actions && <td>{props.actions(item)}</td>}
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
    </>
  );
}

/** The field a 4xx names (`command.0` belongs to `command`), for showing its message beside that field. */
export function fieldOf(error: unknown): string | undefined {
  return error instanceof PierApiError && error.field ? error.field.split(/[.[]/)[0] : undefined;
}

/** What a field's control needs: its id and name, and whether it is invalid and described by what. */
export type FieldA11y = { id: string; name: string; 'aria-invalid': true | undefined; 'aria-describedby': string | undefined };

/** What every form field is told: see `Field`. */
interface FieldProps {
  name: string;
  id?: string;
  label: ComponentChildren;
  hint?: ComponentChildren;
  error: unknown;
  problem?: string;
}

/**
 * A labelled form field, the console's only one: the hint under it, and when the API's
 * error names it (`name`, the API's field) or the form already knows what is wrong with it
 * (`problem`, said before anything is sent), that message under it, the control marked
 * invalid and described by it. `id` names the control when a screen has two fields the API
 * calls the same (two forms' `name`): its hint is `<id>-hint`, its message `<id>-error`.
 * `check` puts a checkbox before its label.
 */
export function Field(props: FieldProps & { check?: boolean; children: (a11y: FieldA11y) => ComponentChildren }) {
  const id = props.id ?? props.name;
  const apiSaysSo = fieldOf(props.error) === props.name;
  // The API's word wins over the form's guess: it is what was refused.
  const message = apiSaysSo ? (props.error as PierApiError).message : props.problem;
  const hintId = props.hint ? `${id}-hint` : undefined;
  const errorId = message ? `${id}-error` : undefined;
  const control = props.children({
    id,
    name: props.name,
    'aria-invalid': message ? true : undefined,
    'aria-describedby': [errorId, hintId].filter(Boolean).join(' ') || undefined,
  });
  return (
    <div class="field" data-field={props.name}>
      {props.check ? (
        <label class="check">
          {control} {props.label}
        </label>
      ) : (
        <>
          <label for={id}>{props.label}</label>
          {control}
        </>
      )}
      {props.hint && (
        <p class="hint" id={hintId}>
          {props.hint}
        </p>
      )}
      {message && (
        <p class="field-error" id={errorId} role="alert">
          {message}
        </p>
      )}
    </div>
  );
}

/** A `Field` holding a one-line text input. */
export function TextField(props: FieldProps & { value: string; onInput: (value: string) => void; input?: Record<string, unknown> }) {
  const { value, onInput, input, ...field } = props;
  return <Field {...field}>{(a) => <input {...a} {...input} value={value} onInput={(e) => onInput(e.currentTarget.value)} />}</Field>;
}

/** The error of a form's submit when it names none of the fields on screen (those show it at the field). */
export function FormError({ error, fields }: { error: unknown; fields: string[] }) {
  return <ErrorNote error={fields.includes(fieldOf(error) ?? '') ? undefined : error} />;
}

/**
 * A table's own scroll box: at 390 px a wide table scrolls inside it, never the page; it
 * is a named, focusable region so keyboard users can scroll it too (axe's
 * scrollable-region-focusable, for tables with no control inside).
 */
export function TableScroll({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div class="table-wrap" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

/** A long operation under way: an indeterminate bar and what is happening, announced. */
export function Progress({ label, children }: { label: string; children?: ComponentChildren }) {
  return (
    <div class="progress" role="status">
      <progress aria-label={label} />
      <span>{children ?? label}</span>
    </div>
  );
}

/** A plain table of rows in its scroll box: a caption for screen readers, column headers. */
export function DataTable({ label, caption, columns, children }: { label: string; caption: string; columns: string[]; children: ComponentChildren }) {
  return (
    <TableScroll label={label}>
      <table>
        <caption class="sr-only">{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </TableScroll>
  );
}

/** A write screen opened by someone whose role cannot write (an address typed in): its title and why there is no form. */
export function NeedsWriteRole({ title, doing }: { title: string; doing: string }) {
  return (
    <section aria-labelledby="needs-role-title">
      <h1 id="needs-role-title">{title}</h1>
      <p>{doing} needs the Owner or Admin role.</p>
    </section>
  );
}
