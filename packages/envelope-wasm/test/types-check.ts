// Type-checks the generated declarations (pkg/envelope_wasm.d.ts) against the documented API:
// `npx tsc -p test/tsconfig.json` must pass. Never run; only compiled.
import init, {
  AldDataset,
  AprModel,
  EnvelopeError,
  LoadOptions,
  SchemaField,
  TensorInfo,
  UrlOptions,
  datasetRootHash,
  inspect,
  loadAld,
  loadApr,
  loadCached,
  loadFromUrl,
  readFoldChunk,
} from '../pkg/envelope_wasm.js';

export async function demo(bytes: Uint8Array, model: Uint8Array, fold: Uint8Array): Promise<void> {
  await init();
  const options: LoadOptions = {
    trustedKeys: [new Uint8Array(32), 'ab'.repeat(32)],
    requireSignature: true,
    password: 'secret',
    x25519Secret: new Uint8Array(32),
  };
  const dataset: AldDataset = loadAld(bytes, options);
  const plain: AldDataset = loadAld(bytes);
  const publisher: string | null = dataset.publisher;
  const flags: boolean = dataset.signed && dataset.encrypted;
  const rows: number = dataset.numRows + dataset.numBatches;
  const compression: string = dataset.compression;
  const schema: SchemaField[] = dataset.schema;
  const firstColumn: string = schema[0].name + schema[0].type + String(schema[0].nullable);
  const batch: Uint8Array = dataset.batchIpc(0);
  const all: Uint8Array = dataset.toIpc();
  const card: unknown = dataset.card;
  dataset.free();
  plain.free();

  const urlOptions: UrlOptions = {
    ...options,
    cacheKey: 'sales',
    onProgress: (loaded: number, total: number | null) => void [loaded, total],
  };
  const fetched: AldDataset = await loadFromUrl('https://example.invalid/sales.ald', urlOptions);
  const cached: AldDataset | null = await loadCached('sales', options);
  cached?.free();
  fetched.free();

  const apr: AprModel = loadApr(model, { trustedKeys: ['ab'.repeat(32)] });
  const tensors: TensorInfo[] = apr.tensors;
  const shape: number[] = tensors[0].shape;
  const values: Float32Array = apr.tensorF32(tensors[0].name);
  const modelType: string = apr.modelType;
  const signer: string | null = apr.publisher;
  apr.free();

  const chunk: Uint8Array = readFoldChunk(fold, 'readme');
  const root: string = datasetRootHash([{ path: 'a.txt', bytes: new Uint8Array([1]) }]);
  const summary: unknown = inspect(bytes);

  try {
    loadAld(new Uint8Array(8));
  } catch (error) {
    const e = error as EnvelopeError;
    void [e.name, e.signal, e.message];
  }
  void [publisher, flags, rows, compression, firstColumn, batch, all, card, shape, values, modelType, signer, chunk, root, summary];
}
