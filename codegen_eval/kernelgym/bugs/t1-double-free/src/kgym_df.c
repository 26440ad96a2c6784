// SPDX-License-Identifier: GPL-2.0
/* a scratch buffer that can be resized and released */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/string.h>


static char *kgym_buf;
static size_t kgym_size;
static DEFINE_MUTEX(kgym_lock);

static int kgym_df_resize(size_t size)
{
	char *nbuf;

	kfree(kgym_buf);
	if (!size || size > PAGE_SIZE)
		return -EINVAL;
	nbuf = kzalloc(size, GFP_KERNEL);
	if (!nbuf)
		return -ENOMEM;
	kgym_buf = nbuf;
	kgym_size = size;
	pr_info("kgym_df: size %zu\n", kgym_size);
	return 0;
}

static ssize_t kgym_df_write(struct file *file, const char __user *ubuf,
			     size_t len, loff_t *off)
{
	unsigned int size;
	int err;

	err = kstrtouint_from_user(ubuf, len, 10, &size);
	if (err)
		return err;
	mutex_lock(&kgym_lock);
	err = kgym_df_resize(size);
	mutex_unlock(&kgym_lock);
	return err ? err : len;
}

static const struct proc_ops kgym_df_ops = {
	.proc_write = kgym_df_write,
};

static int __init kgym_df_init(void)
{
	if (!proc_create("kgym_df", 0222, NULL, &kgym_df_ops))
		return -ENOMEM;
	return 0;
}

static void __exit kgym_df_exit(void)
{
	remove_proc_entry("kgym_df", NULL);
}

module_init(kgym_df_init);
module_exit(kgym_df_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kernel-gym bundled bug: kgym_df");
