import http from 'node:http';

/**
 * Whether the Docker engine answers where compute and databases will look for it
 * (PIER_DOCKER_HOST, else the default socket): null when it does, else what to do, said
 * once at start instead of by every background loop every few seconds.
 */
export async function dockerProblem(dockerHost: string | undefined): Promise<string | null> {
  const where = dockerHost || 'unix:///var/run/docker.sock';
  const target: http.RequestOptions = where.startsWith('unix://')
    ? { socketPath: where.slice('unix://'.length) }
    : { host: new URL(where.replace(/^tcp:/, 'http:')).hostname, port: Number(new URL(where.replace(/^tcp:/, 'http:')).port || 2375) };
  const answered = await new Promise<boolean>((resolve) => {
    const req = http.get({ ...target, path: '/_ping', timeout: 3000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
  if (answered) return null;
  return [
    `Pier runs services and databases on Docker (PIER_CLUSTER=docker, the default), and no Docker engine answers at ${where}.`,
    'Any one of these fixes it:',
    '  - as root on Debian, `./pier up` installs and starts it (apt-get install docker.io; dockerd)',
    '  - elsewhere: install Docker Engine (https://docs.docker.com/engine/install/) and start it, or join the docker group',
    '  - an engine elsewhere: PIER_DOCKER_HOST=tcp://host:2375 ./pier up',
    '  - a Kubernetes cluster instead: PIER_CLUSTER=kubernetes PIER_KUBECONFIG=/path/to/kubeconfig ./pier up',
  ].join('\n');
}
