// Deleting a service asks for its name to be typed (it cannot be undone: the service, its
// deployments and its URL go), then follows the teardown until the service is gone and
// returns to the list.
import { useState } from 'preact/hooks';
import { PierApiError, unwrap } from '../api.ts';
import { useQuery } from '../data.ts';
import { navigate } from '../router.ts';
import { useSession } from '../session.ts';
import { ConfirmDialog, Progress, TextField } from '../ui.tsx';
import { SERVICE, type SectionProps } from './service-types.ts';

// Faster than the detail's poll: the person is waiting to be taken back to the list.
const GONE_POLL_MS = 1000;

/** `onDeleting` is told once the API has accepted the deletion: the page drops its sections then. */
export function DeleteService({ service, path, onDeleting }: SectionProps & { onDeleting: () => void }) {
  const { client } = useSession();
  const [open, setOpen] = useState(false);
  const [typed, setTyped] = useState('');
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [deleting, setDeleting] = useState(false);
  // Once deleted the service reads as 404 (or `deleted`): that is the end of the teardown.
  const following = deleting || service.status === 'deleting';
  const after = useQuery(following ? `service-gone:${service.id}` : null, () => unwrap(client.GET(SERVICE, { params: { path } })), GONE_POLL_MS);
  const gone = (after.error instanceof PierApiError && after.error.status === 404) || after.data?.status === 'deleted';
  if (gone) queueMicrotask(() => navigate('/services'));
  // Not useMutation: its re-read of every query on screen would ask the sections of a
  // service being torn down for their data; the detail shows the teardown instead.
  const confirm = async () => {
    setPending(true);
    setError(undefined);
    try {
      await unwrap(client.DELETE(SERVICE, { params: { path } }));
      setOpen(false);
      setDeleting(true);
      onDeleting();
    } catch (err) {
      setError(err);
    } finally {
      setPending(false);
    }
  };
  // Once the detail reads `deleting`, its own progress line says it.
  if (following)
    return service.status === 'deleting' ? null : <Progress label="Deleting the service">Deleting {service.name}… the list opens once it is gone.</Progress>;
  return (
    <>
      <button type="button" class="danger" aria-label={`Delete service ${service.name}`} onClick={() => setOpen(true)}>
        Delete
      </button>
      <ConfirmDialog
        open={open}
        title="Delete service?"
        confirmLabel="Delete service"
        pending={pending}
        confirmDisabled={typed !== service.name}
        error={error}
        onCancel={() => {
          setError(undefined);
          setTyped('');
          setOpen(false);
        }}
        onConfirm={() => void confirm()}
      >
        <p>
          Delete <strong>{service.name}</strong>? Its replicas, deployments, domains and URL go with it; this cannot be undone.
        </p>
        <TextField
          name="confirm_name"
          id="delete-service-name"
          label={`Type ${service.name} to confirm`}
          error={undefined}
          input={{ autoComplete: 'off', spellcheck: false }}
          value={typed}
          onInput={setTyped}
        />
      </ConfirmDialog>
    </>
  );
}
