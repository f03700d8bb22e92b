import { useState } from 'preact/hooks';
import { unwrap } from '../api.ts';
import { useMutation } from '../data.ts';
import { useSession } from '../session.ts';
import { ErrorNote } from '../ui.tsx';
import type { SectionProps } from './service-types.ts';

/** Deploy an image tag, restart (Owner or Admin). */
export function ActionsSection({ service, path }: SectionProps) {
  const image = service.image;
  const { client } = useSession();
  const [tag, setTag] = useState('');
  const [done, setDone] = useState('');
  const deploy = useMutation((image_tag: string) =>
    unwrap(client.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}/deploy', { params: { path }, body: { image_tag } })),
  );
  const restart = useMutation(() => unwrap(client.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}/restart', { params: { path } })));
  return (
    <div class="panel">
      <h2>Actions</h2>
      <form
        class="inline"
        onSubmit={async (e) => {
          e.preventDefault();
          setDone('');
          if (await deploy.run(tag.trim())) setDone(`Deploying ${tag.trim()}: the status above follows it.`);
        }}
      >
        <label>
          Image tag to deploy
          <input value={tag} placeholder={image?.split(':').pop() ?? 'latest'} required onInput={(e) => setTag(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary" disabled={deploy.pending || !tag.trim()}>
          {deploy.pending ? 'Deploying…' : 'Deploy'}
        </button>
        <button
          type="button"
          disabled={restart.pending}
          onClick={async () => {
            setDone('');
            if (await restart.run()) setDone('Restarting: the status above follows it.');
          }}
        >
          {restart.pending ? 'Restarting…' : 'Restart'}
        </button>
      </form>
      <ErrorNote error={deploy.error ?? restart.error} />
      {done && (
        <p class="note" role="status">
          {done}
        </p>
      )}
    </div>
  );
}
