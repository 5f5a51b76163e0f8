// The five calls of openapi-fetch.ts through the fetch client
// @hey-api/openapi-ts generates from yard's /openapi.json (gen/), as a
// person with Basic; run by TestGeneratedClients (docs/clients.md,
// "Generated clients"). It prints one JSON line of what it read.
import { client } from "./gen/client.gen";
import { createBark, createDog, getBark, getCar, listCars, listDogs } from "./gen/sdk.gen";
import type { Bark } from "./gen/types.gen";

client.setConfig({
  baseUrl: process.env.YARD_URL,
  // Called for each scheme an operation accepts; only Basic answers.
  auth: (scheme) => (scheme.scheme === "basic" ? process.env.YARD_USER + ":" + process.env.YARD_PASSWORD : undefined),
});

function unexpected(what: string, status: number | undefined, body: unknown): never {
  throw new Error(what + ": " + status + " " + JSON.stringify(body));
}

async function main(): Promise<void> {
  const list = await listDogs();
  if (!list.data) unexpected("list dogs", list.response?.status, list.error);

  const created = await createDog({ body: { name: "Rex", email: "rex@example.org", barkEffect: "email-count" } });
  if (!created.data) unexpected("create a dog", created.response?.status, created.error);
  const dog = created.data;

  // Redirects off: the 303 of the finished task is its answer.
  const bark = await createBark({ path: { dog_id: dog.id }, headers: { Prefer: "respond-async" } });
  if (bark.response?.status !== 202 || !bark.data) unexpected("an asynchronous bark", bark.response?.status, bark.error);
  let task: Bark = bark.data;
  let status = 202;
  for (let i = 0; i < 30 && !["succeeded", "failed", "canceled"].includes(task.status); i++) {
    const got = await getBark({ path: { dog_id: dog.id, bark_id: bark.data.id }, headers: { Prefer: "wait=10" }, redirect: "manual" });
    status = got.response?.status ?? 0;
    if (status === 200 && got.data) task = got.data;
    else if (status === 303) task = got.error as unknown as Bark;
    else unexpected("read the task", status, got.error);
  }
  if (task.status !== "succeeded" || status !== 303 || task.id !== bark.data.id) unexpected("the finished task", status, task);

  const red = await listCars({ query: { color: "red" } });
  if (!red.data || red.data.items.length === 0) unexpected("list red cars", red.response?.status, red.error);

  const car = await getCar({ path: { car_id: red.data.items[0].id } });
  if (!car.data) unexpected("read a car", car.response?.status, car.error);

  console.log(JSON.stringify({ dogs: list.data.total, dog: dog.id, task: task.id, taskStatus: status, redCars: red.data.total, car: car.data.id }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
