/** The magpie command line: start the platform, call functions, read objects. */
import { parseArgs } from 'node:util'
import { runGet, runInvoke, runLogs } from './client-commands.ts'
import { runDeploy } from './deploy.ts'
import { runMemory, runStatus, runTimeline } from './inspect.ts'
import { runNew } from './new.ts'
import { runSecret } from './secret.ts'
import { runStart } from './start.ts'

const USAGE = `usage: magpie <command> [options]

commands:
  start [--port 8080] [--host 127.0.0.1] [--cpus N] [--functions ./functions] [--token T]
                              a gateway and one node serving a folder of functions
  start --head [--state DIR or redis://HOST:PORT] [--secret-file F]
                              a gateway alone, for nodes to join; writes the join command,
                              with the cluster secret, to DIR/join-command (mode 0600); keeps
                              its secret, functions, calls in flight and results in the state
                              (--nodes too), and serves them again when started again on it
  start --join URL [--cpus N] [--resources '{"gpu":1}'] [--secret-file F]
                              a node joining the head at URL, retrying until it answers
                              (secret: --secret-file, $MAGPIE_SECRET_FILE, $MAGPIE_CLUSTER_SECRET or --secret)
        cluster (--head, --join): [--advertise-url URL] the URL others use to reach this process
                              ($MAGPIE_ADVERTISE_URL; needed behind NAT; never 0.0.0.0)
  start --nodes N [--cpus N]   a gateway and N local node processes
        object store (start, --join, --nodes): [--object-store-memory 30%] memory for object values
                              (bytes, 64MiB, 2GB or a share of RAM); [--state DIR] where values spill
                              to disk (default a temporary folder); [--spill-limit SIZE] disk for them
        calls (start, --join, --nodes): [--max-call-time S] the longest any call may run, in seconds;
                              [--worker-memory 512MiB] the most heap one worker thread may use;
                              [--max-call-output 1MiB] what one call may write to stdout and stderr;
                              [--actor-threads N] threads for actors (default 4 per CPU), then shared;
                              [--log-retention 64MiB,1h] what calls wrote, kept per node for their logs
        logging: [--log-level info] the platform's log on stderr (JSON unless a terminal): one line per
                              request (info), warnings (warn); also $MAGPIE_LOG_LEVEL
        gateway (start, --head, --nodes): [--max-body 64MiB] largest request body;
                              [--metrics-public] /metrics without the token;
                              [--max-queued N] [--max-queued-bytes SIZE] calls (and bytes of their
                              arguments) that may wait before new ones get 429 (default from memory)
        functions (start, --head, --nodes): [--watch] deploy a saved folder again at once;
                              [--admin-token T] ($MAGPIE_ADMIN_TOKEN) what deploys need;
                              [--keep-versions 5] versions kept; [--max-bundle 16MiB] largest bundle
        stopping: Ctrl-C or SIGTERM drains (running calls finish); a second one, or
                              [--stop-grace 60] seconds, stops at once
  deploy PATH... [--url URL]   bundle function folders (or folders of them) here and deploy them to a
                              running platform; prints name, version, new or unchanged
                              (token: --admin-token, $MAGPIE_ADMIN_TOKEN, else --token)
  new NAME [--actor] [--functions DIR]  write a function folder (index.ts and a test) to start from
  secret set NAME | list | rm NAME  secrets on the platform (set reads the value from stdin; list shows
                              names only); a function reads those its config.secrets grants with env
  invoke NAME [JSON] [--async] call a function (JSON: an array of arguments); NAME@VERSION pins one
  get ID                       read an object, waiting until it is ready
  logs ID [-f] [--children] [--timestamps]
                              what a call wrote (-f: and what it writes, until it settles;
                              --children: and the calls it made, each line prefixed [id])
  status [--json]              nodes, queues and objects at a glance
  memory [--limit 20] [--json] the biggest objects: where they are and what holds them
  timeline --out trace.json [--seconds 60]
                              the last calls in Chrome's trace format (open it in Perfetto)

client commands take --url (default $MAGPIE_URL or http://127.0.0.1:8080) and --token ($MAGPIE_TOKEN).`

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      cpus: { type: 'string' },
      functions: { type: 'string' },
      token: { type: 'string' },
      url: { type: 'string' },
      head: { type: 'boolean' },
      join: { type: 'string' },
      nodes: { type: 'string' },
      secret: { type: 'string' },
      'secret-file': { type: 'string' },
      'advertise-url': { type: 'string' },
      'metrics-public': { type: 'boolean' },
      'max-call-time': { type: 'string' },
      'worker-memory': { type: 'string' },
      'max-call-output': { type: 'string' },
      'actor-threads': { type: 'string' },
      'log-retention': { type: 'string' },
      'log-level': { type: 'string' },
      'max-queued': { type: 'string' },
      'max-queued-bytes': { type: 'string' },
      'stop-grace': { type: 'string' },
      resources: { type: 'string' },
      'object-store-memory': { type: 'string' },
      state: { type: 'string' },
      'spill-limit': { type: 'string' },
      'max-body': { type: 'string' },
      async: { type: 'boolean' },
      watch: { type: 'boolean' },
      actor: { type: 'boolean' },
      'admin-token': { type: 'string' },
      'keep-versions': { type: 'string' },
      'max-bundle': { type: 'string' },
      follow: { type: 'boolean', short: 'f' },
      json: { type: 'boolean' },
      limit: { type: 'string' },
      out: { type: 'string' },
      seconds: { type: 'string' },
      children: { type: 'boolean' },
      timestamps: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help || command === undefined || command === 'help') {
    console.log(USAGE)
    return command === undefined ? 2 : 0
  }
  const url = values.url ?? process.env.MAGPIE_URL ?? 'http://127.0.0.1:8080'
  const token = values.token ?? process.env.MAGPIE_TOKEN
  switch (command) {
    case 'start':
      return runStart({
        ...values,
        token,
        objectStoreMemory: values['object-store-memory'],
        spillLimit: values['spill-limit'],
        maxBody: values['max-body'],
        secretFile: values['secret-file'],
        advertiseUrl: values['advertise-url'],
        metricsPublic: values['metrics-public'],
        maxCallTime: values['max-call-time'],
        workerMemory: values['worker-memory'],
        maxCallOutput: values['max-call-output'],
        actorThreads: values['actor-threads'],
        logRetention: values['log-retention'],
        logLevel: values['log-level'],
        maxQueued: values['max-queued'],
        maxQueuedBytes: values['max-queued-bytes'],
        stopGrace: values['stop-grace'],
        adminToken: values['admin-token'] ?? process.env.MAGPIE_ADMIN_TOKEN,
        keepVersions: values['keep-versions'],
        maxBundle: values['max-bundle'],
      })
    case 'deploy':
      return runDeploy(url, values['admin-token'] ?? process.env.MAGPIE_ADMIN_TOKEN ?? token, positionals)
    case 'new':
      return runNew(positionals, values.actor === true, values.functions)
    case 'secret':
      return runSecret(url, values['admin-token'] ?? process.env.MAGPIE_ADMIN_TOKEN ?? token, positionals)
    case 'invoke':
      return runInvoke(url, token, positionals, values.async === true)
    case 'get':
      return runGet(url, token, positionals)
    case 'logs':
      return runLogs(url, token, positionals, {
        follow: values.follow === true,
        children: values.children === true,
        timestamps: values.timestamps === true,
      })
    case 'status':
      return runStatus(url, token, values.json === true)
    case 'memory':
      return runMemory(url, token, values.limit, values.json === true)
    case 'timeline':
      return runTimeline(url, token, values.out, values.seconds)
    default:
      console.error(`unknown command: ${command}\n\n${USAGE}`)
      return 2
  }
}

// A reader of our output that went away (EPIPE) is no reason to crash, nor to stop stopping.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err
  })
}

const argv = process.argv.slice(2)
main(argv).then(
  (code) => {
    // A stopped platform ends now, even if a reader of its output stalled
    // (what is still queued for stdout would otherwise keep it alive).
    if (argv[0] === 'start') process.exit(code)
    if (code !== 0) process.exitCode = code
  },
  (err: unknown) => {
    console.error(`magpie: ${(err as Error).message}`)
    process.exitCode = 1
  },
)
